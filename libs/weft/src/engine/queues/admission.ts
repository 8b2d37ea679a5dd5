// Queue admission (docs/queues.md): every engine runs a short background pass that admits the
// next enqueued workflows of each declared queue, in a transaction that makes them `running` and
// claims them for itself (storage/repositories/queue.repository.ts), then launches them here. A
// local start into a queue and a local end of a queued run nudge the pass, so admission waits for
// neither the tick nor another engine.
import { QueueNotDeclaredError } from '../../common/errors.js';
import type { StartOptions, WorkflowDefinition } from '../../common/types.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import type { Runtime } from '../run/runtime.js';
import { TimerLoop } from '../timer-loop.js';
import { type ResolvedQueue, startQueue } from './options.js';

/** Admitted per queue per pass: a busy queue cannot hold a pass (and the other queues) for long. */
export const ADMIT_BATCH = 100;
const FORGET_AFTER_MS = 60_000;

export interface QueueAdmissionDependencies {
  store: WorkflowStore;
  registry: WorkflowRegistry;
  ownership: OwnershipPolicy;
  runtime: Runtime;
  options: ResolvedEngineOptions;
  queues: Map<string, ResolvedQueue>;
  /** False once this engine may not start runs (disposed, draining, deposed, not the lease holder). */
  mayAdmit(): boolean;
}

export type QueueFigures = Record<string, { enqueued: number; running: number }>;

export class QueueAdmission {
  readonly declared: ReadonlyMap<string, ResolvedQueue>;
  /** Runs this engine admitted (id → when): their end frees a slot, worth a pass at once. */
  private readonly admittedHere = new Map<string, number>();
  private readonly loop: TimerLoop;
  private figures: QueueFigures = {};
  private turn = 0;

  constructor(private readonly deps: QueueAdmissionDependencies) {
    this.declared = deps.queues;
    this.loop = new TimerLoop(
      async () => void (await this.pass()),
      deps.options.timerPollMs,
      (err) => deps.options.logger.warn(`Queue admission failed: ${(err as Error).message}`),
    );
  }

  /** `@Workflow(name, { queue })` must name a declared queue: checked at registration. */
  checkDefinition(def: WorkflowDefinition): void {
    if (def.queue !== undefined) startQueue({ queue: def.queue }, undefined, this.declared);
  }

  /** A start's queue and priority, or null outside a queue (no cost beyond two property reads). */
  startOf(opts: StartOptions, def: WorkflowDefinition): { queue: string; priority: number } | null {
    if (opts.queue === undefined && opts.priority === undefined && def.queue === undefined) return null;
    return startQueue(opts, def.queue, this.declared);
  }

  assertDeclared(queue: string): void {
    if (!this.declared.has(queue)) throw new QueueNotDeclaredError(queue, [...this.declared.keys()]);
  }

  /** The background pass (backgroundTasks 'auto'). */
  start(): void {
    if (this.declared.size > 0) this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A slot may have freed or work arrived: pass soon instead of at the next tick. */
  nudge(inMs = 0): void {
    this.loop.nudgeAt(Date.now() + inMs);
  }

  /** A run ended here: if this engine admitted it, its slot is free now. */
  ended(workflowId: string): void {
    if (this.admittedHere.delete(workflowId)) this.nudge();
  }

  /** Enqueued and running per queue as of the last pass (health details; no I/O). */
  snapshot(): QueueFigures {
    return this.figures;
  }

  /** One admission pass over every declared queue, each in turn; resolves with how many it admitted. */
  async pass(): Promise<number> {
    const { store, registry, ownership, options } = this.deps;
    if (this.declared.size === 0 || !this.deps.mayAdmit()) return 0;
    const names = [...this.declared.keys()];
    const stats = await store.queues.stats(names);
    this.forgetGone();
    const types = registry.names();
    let admitted = 0;
    let more = false;
    // A different queue goes first on each pass, so none waits behind the others' batches.
    const first = this.turn++ % names.length;
    for (let i = 0; i < names.length; i++) {
      const q = this.declared.get(names[(first + i) % names.length])!;
      const s = stats.get(q.name);
      if (!s || !worthAdmitting(q, s, types)) continue;
      const room = ownership.claims.reserve(ADMIT_BATCH);
      if (room.granted <= 0 || !this.deps.mayAdmit()) {
        room.done();
        break;
      }
      let n: number;
      try {
        n = await this.admit(q, room.granted, types);
      } finally {
        room.done();
      }
      admitted += n;
      stats.set(q.name, { enqueued: s.enqueued - n, running: s.running + n });
      if (n === room.granted && s.enqueued > n) more = true;
    }
    this.figures = Object.fromEntries(stats);
    for (const [queue, s] of stats) {
      options.metrics.queueDepth?.(queue, s.enqueued);
      options.metrics.queueRunning?.(queue, s.running);
    }
    if (more) this.nudge();
    return admitted;
  }

  private async admit(q: ResolvedQueue, room: number, types: string[]): Promise<number> {
    const { store, registry, ownership, runtime, options } = this.deps;
    const claimer = ownership.claims.claimer();
    // The fence a command of this engine carries under ownership 'lease' (none in the other modes).
    const leaseFence = ownership.fence.fenceCommand({ workflowId: '', expectedVersion: 0 }).leaseFence;
    const sentAt = performance.now();
    const res = await store.queues.admit({
      queue: q.name,
      max: room,
      concurrency: q.concurrency,
      perEngineConcurrency: q.perEngineConcurrency,
      perEngineOwner: claimer?.engineId ?? null,
      rateLimit: q.rateLimit,
      types,
      claimer,
      leaseFence,
    });
    if (res.admitted.length) options.metrics.queueAdmissions?.(q.name, res.admitted.length);
    for (const w of res.admitted) {
      // Without the claim (a leftover row another engine still holds), its holder or a reclaim scan drives it.
      if (!ownership.claims.adoptStartClaim(w.id, w.claimEpoch, sentAt)) continue;
      this.admittedHere.set(w.id, Date.now());
      const run = { workflowId: w.id, definition: registry.get(w.type), input: w.input, runNumber: w.runNumber, version: w.version };
      runtime.launchNew({ ...run, parentId: w.parentId }, w.inbox);
    }
    const rate = q.rateLimit;
    if (rate && res.admitted.length < room && res.recentCount + res.admitted.length >= rate.limit) {
      // The window is full: come back when its oldest admission leaves it.
      options.metrics.queueRateLimitWait?.(q.name);
      this.nudge(Math.ceil(res.windowFreesInMs ?? rate.periodMs) + 1);
    }
    return res.admitted.length;
  }

  /**
   * Runs no longer live here (evicted while parked, taken over) are forgotten; the tick covers
   * their end. Only after a while: a run just launched may not be live yet.
   */
  private forgetGone(): void {
    const before = Date.now() - FORGET_AFTER_MS;
    for (const [id, at] of this.admittedHere) if (at < before && !this.deps.runtime.isLive(id)) this.admittedHere.delete(id);
  }
}

/** A transaction is worth it when the queue has work, this engine runs types, and the last count left room. */
function worthAdmitting(q: ResolvedQueue, s: { enqueued: number; running: number }, types: string[]): boolean {
  return s.enqueued > 0 && types.length > 0 && (q.concurrency === null || s.running < q.concurrency);
}
