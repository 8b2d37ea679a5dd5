import type { ClockTimer, WorkflowClock } from '../common/clock.js';
import { systemClock } from './clock.js';

/** What a run tells its engine about the timers of its waits (ExecutionHost.timers). */
export interface TimerHooks {
  /** A wait with a timer is pending here; its row is written and due at `fireAt` (epoch ms, workflow time). */
  armed(workflowId: string, seq: number, fireAt: number): void;
  /** The wait ended (a message, its own fire): its timer needs no fire from here. */
  cleared(workflowId: string, seq: number): void;
}

export interface LocalTimerOptions {
  /**
   * Takes the timer row if it is due and wakes its run (Transitions.fireOwn); resolves with the
   * ms it is still to wait when the database clock says it is not due yet, else null.
   */
  fire(workflowId: string, seq: number): Promise<number | null>;
  /** Timers armed at once at most; past it a timer is left to the poll (default LOCAL_TIMER_CAP). */
  cap?: number;
  /** False under backgroundTasks 'manual': every timer waits for runMaintenance(). */
  enabled: boolean;
  onError(err: unknown): void;
  /** Workflow time (default real time): the testing kit's clock fires them when it skips. */
  clock?: WorkflowClock;
}

/** About 20 MB of handles: more timers than that wait for the poll. */
export const LOCAL_TIMER_CAP = 100_000;

/**
 * The timers of this engine's own runs, each armed in-process to its due time, so a sleep or a
 * wait's timeout fires within a few ms of it; the timer poll (timer-loop.ts) is the backstop
 * for timers no engine armed (another engine's, one past the cap, one armed before a restart).
 * A fire takes the row as the poll does, so the two never both wake the run, and the wake goes
 * through the same ownership check. A timer stays armed while its run is evicted from memory
 * (the fire reloads it); it goes when its wait ends, and all of them at close().
 */
export class LocalTimers implements TimerHooks {
  private readonly byWorkflow = new Map<string, Map<number, ClockTimer>>();
  private count = 0;
  private firing = 0;
  private closed = false;
  private readonly clock: WorkflowClock;

  constructor(private readonly o: LocalTimerOptions) {
    this.clock = o.clock ?? systemClock;
  }

  get size(): number {
    return this.count;
  }

  /** Fires under way (taking the row, waking the run): the testing kit waits for them. */
  get inFlight(): number {
    return this.firing;
  }

  armed(workflowId: string, seq: number, fireAt: number): void {
    this.cleared(workflowId, seq);
    if (!this.o.enabled || this.closed || this.count >= (this.o.cap ?? LOCAL_TIMER_CAP)) return;
    const handle = this.clock.setTimer(() => this.due(workflowId, seq), Math.max(0, fireAt - this.clock.now()));
    let seqs = this.byWorkflow.get(workflowId);
    if (!seqs) this.byWorkflow.set(workflowId, (seqs = new Map()));
    seqs.set(seq, handle);
    this.count++;
  }

  cleared(workflowId: string, seq: number): void {
    const seqs = this.byWorkflow.get(workflowId);
    const handle = seqs?.get(seq);
    if (!seqs || !handle) return;
    handle.clear();
    seqs.delete(seq);
    if (seqs.size === 0) this.byWorkflow.delete(workflowId);
    this.count--;
  }

  /** Resolves once no fire is under way (a shutdown lets them finish before the database closes). */
  async settled(untilMs: number): Promise<void> {
    while (this.firing > 0 && Date.now() < untilMs) await new Promise((r) => setTimeout(r, 5));
  }

  close(): void {
    this.closed = true;
    for (const seqs of this.byWorkflow.values()) for (const handle of seqs.values()) handle.clear();
    this.byWorkflow.clear();
    this.count = 0;
  }

  private due(workflowId: string, seq: number): void {
    this.cleared(workflowId, seq);
    if (this.closed) return;
    this.firing++;
    this.o
      .fire(workflowId, seq)
      // Not due by the database clock yet (this machine's clock runs ahead): armed again for the rest.
      .then((waitMs) => waitMs !== null && this.armed(workflowId, seq, this.clock.now() + waitMs))
      .catch(this.o.onError) // the poll fires it later
      .finally(() => this.firing--);
  }
}
