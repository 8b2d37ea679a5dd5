// releaseWhileWaiting (docs/queues.md, docs/decisions/0040): a run of such a queue gives its slot
// back when it parks, and takes one again when a wake comes, before its code goes on. Both are
// written to its row (slot_released_at, slot_wanted_at), so the admission function, which counts
// running workflows from weft_workflows under the queue's lock, never counts a slot twice or loses
// one: nothing is kept in memory that a crash could make wrong. A wake that finds no free slot
// waits here, and is tried again on this engine's admission passes, ahead of fresh admissions.
import type { WeftLogger } from '../../common/types.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import type { Execution } from '../run/execution.js';
import type { ResolvedQueue } from './options.js';

export interface QueueSlotsDependencies {
  store: WorkflowStore;
  queues: ReadonlyMap<string, ResolvedQueue>;
  logger: WeftLogger;
  /** A slot was given back in this queue: an admission pass there is worth it now. */
  freed(queue: string): void;
}

export class QueueSlots {
  /** Releases in flight, by run: a wake that comes meanwhile asks for its slot once it landed. */
  private readonly releasing = new Map<Execution, Promise<void>>();
  /** Woken runs waiting for a slot, per queue, in the order they were woken. */
  private readonly wanting = new Map<string, Set<Execution>>();

  constructor(private readonly deps: QueueSlotsDependencies) {}

  /** Whether runs of this queue give their slot back while parked. */
  releases(queue: string | null): boolean {
    return queue !== null && this.deps.queues.get(queue)?.releaseWhileWaiting === true;
  }

  /** The run parked: in a releaseWhileWaiting queue, it gives its slot back (one statement). */
  parked(exec: Execution): void {
    if (exec.slot !== 'held' || exec.readOnly || !this.releases(exec.queue)) return;
    exec.slotReleased();
    const queue = exec.queue!;
    const p = this.deps.store.queues
      .release(exec.workflowId, exec.version, queue)
      .then(
        (released) => {
          if (!released) exec.slotKept();
          else this.deps.freed(queue);
        },
        (err: unknown) => {
          // Not known to have landed: the run asks for its slot again on its next wake (which
          // finds it held if it did not land), so nothing is lost either way.
          this.deps.logger.warn(`A parked run of queue "${queue}" could not give its slot back: ${(err as Error).message}`);
        },
      )
      .finally(() => this.releasing.delete(exec));
    this.releasing.set(exec, p);
  }

  /** A wake came while the run's slot was released: it goes on once it holds one. */
  want(exec: Execution): void {
    const queue = exec.queue!;
    let set = this.wanting.get(queue);
    if (!set) this.wanting.set(queue, (set = new Set()));
    set.add(exec);
    void (this.releasing.get(exec) ?? Promise.resolve())
      .then(() => this.retake(queue))
      // The admission pass tries it again (every timerPollInterval at the latest).
      .catch((err: unknown) => this.deps.logger.warn(`Woken runs of queue "${queue}" could not take a slot: ${(err as Error).message}`));
  }

  /** Whether runs of this engine wait for a slot of the queue. */
  waitingIn(queue: string): boolean {
    return (this.wanting.get(queue)?.size ?? 0) > 0;
  }

  /** Queues where runs of this engine wait for a slot. */
  queuesWaiting(): string[] {
    return [...this.wanting.keys()].filter((q) => this.waitingIn(q));
  }

  /**
   * This engine's woken runs of the queue ask for slots (one statement, under the queue's lock);
   * those granted go on. Resolves with how many went on.
   */
  async retake(queue: string): Promise<number> {
    const set = this.wanting.get(queue);
    if (!set) return 0;
    for (const exec of set) if (exec.state !== 'active' || exec.slot !== 'wanted') set.delete(exec);
    if (set.size === 0) return 0;
    const q = this.deps.queues.get(queue);
    const runs = [...set];
    const goOn = await this.deps.store.queues.retake(
      queue,
      runs.map((e) => e.workflowId),
      q?.concurrency ?? null,
      q?.partition?.concurrency ?? null,
    );
    let n = 0;
    for (const exec of runs) {
      if (!goOn.has(exec.workflowId)) continue;
      set.delete(exec);
      n++;
      exec.slotTaken();
    }
    return n;
  }
}
