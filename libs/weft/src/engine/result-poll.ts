// result() of a workflow that does not end here (enqueued, or run by another engine) reads its
// status now and then. Each waiter keeps its own backoff, but the reads due at one moment go as
// one statement: a thousand handles awaited on a queue's backlog cost a few statements a
// second, not a thousand round trips (docs/queues.md: they were most of a queued workload's cost).
// The waits between reads share one timer: a waiter costs no timer, closure or promise of its own
// while it waits (docs/decisions/0065).
import { detached } from '../common/detached.js';
import { WorkflowStatus } from '../common/types.js';
import { isTerminal } from './transitions.js';

/**
 * A waiter whose workflow still waits for its start (enqueued, pending) reads again after this:
 * a backlog's handles would otherwise read twice a second each while nothing can have ended, and
 * one admitted here is announced here when it ends.
 */
export const NOT_STARTED_POLL_MS = 1000;

/** Ids per statement: a bound on its parameter; more wait for the next read. */
const MAX_IDS_PER_READ = 1000;

/** Waits due this close to the earliest one are read with it: fewer, fuller statements. */
const SHARED_WAKE_MS = 10;

/** What a read says: ended (or absent, or the read failed), not started yet, or running here. */
export interface Look {
  readonly ended: boolean;
  readonly notStarted: boolean;
  /** Its run is live in this engine when the wait ended: it announces its end here, nothing was read. */
  readonly live: boolean;
}

const look = (ended: boolean, notStarted: boolean, live: boolean): Look => Object.freeze({ ended, notStarted, live });
const ENDED = look(true, false, false);
const NOT_STARTED = look(false, true, false);
const RUNNING = look(false, false, false);
/** What a status read says: a workflow without a row reads as ended (its row read says absent). */
function lookOf(s: WorkflowStatus | undefined): Look {
  if (s === undefined || isTerminal(s)) return ENDED;
  return s === WorkflowStatus.Enqueued || s === WorkflowStatus.Pending ? NOT_STARTED : RUNNING;
}

/** What a wait ends with when the run is live here (no read). */
export const LIVE_HERE = look(false, false, true);

/** One caller of a read: result()'s first look, or its waiter between two looks. */
export interface Looker {
  readonly workflowId: string;
  /** False once it needs no look any more (its workflow ended here first): skipped when due. */
  readonly waiting: boolean;
  deliver(look: Look): void;
}

/** A one-off look(): resolves its promise. */
class OneLook implements Looker {
  readonly waiting = true;
  constructor(
    readonly workflowId: string,
    readonly deliver: (look: Look) => void,
  ) {}
}

export class ResultPoll {
  /** Lookers whose read is due. */
  private readonly due: Looker[] = [];
  private scheduled = false;
  private reading = false;
  /**
   * Lookers waiting for their read's time: a binary min-heap on `ats` (monotonic ms: a wall clock
   * set back delays none), `lookers` beside it.
   */
  private readonly ats: number[] = [];
  private readonly lookers: Looker[] = [];
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;

  constructor(
    private readonly statuses: (ids: string[]) => Promise<Map<string, WorkflowStatus>>,
    /** Whether the workflow's run is live in this engine (its end is announced here). */
    private readonly isLive: (workflowId: string) => boolean,
  ) {}

  /**
   * Whether the workflow's row reads terminal now (or absent, or the read failed: the caller's
   * own read of the row says which), read together with the others asked in the same turn of
   * the event loop, or while the previous read was out.
   */
  look(id: string): Promise<Look> {
    return new Promise((resolve) => this.enqueue(new OneLook(id, resolve)));
  }

  /**
   * Delivers the looker's look in `ms`: LIVE_HERE without a read if its run is live here then,
   * else its read's. Nothing if it stopped waiting by then.
   */
  lookIn(looker: Looker, ms: number): void {
    const at = performance.now() + ms;
    this.push(at, looker);
    if (at < this.timerAt) this.arm(at);
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    // Shared by every waiter: it keeps no one caller's async context.
    this.timer = detached(() => setTimeout(() => this.fire(), Math.max(0, at - performance.now())));
  }

  private fire(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    const until = performance.now() + SHARED_WAKE_MS;
    while (this.ats.length > 0 && this.ats[0]! <= until) {
      const looker = this.pop();
      if (!looker.waiting) continue;
      if (this.isLive(looker.workflowId)) looker.deliver(LIVE_HERE);
      else this.enqueue(looker);
    }
    if (this.ats.length > 0) this.arm(this.ats[0]!);
  }

  private enqueue(looker: Looker): void {
    this.due.push(looker);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.reading) return;
    this.scheduled = true;
    setImmediate(() => void this.read());
  }

  private async read(): Promise<void> {
    this.scheduled = false;
    const batch = this.due.splice(0, MAX_IDS_PER_READ);
    if (batch.length === 0) return;
    this.reading = true;
    try {
      const found = await this.statuses([...new Set(batch.map((w) => w.workflowId))]);
      for (const w of batch) {
        const s = found.get(w.workflowId);
        if (w.waiting) w.deliver(lookOf(s));
      }
    } catch {
      for (const w of batch) if (w.waiting) w.deliver(ENDED); // the caller's own read surfaces the error
    } finally {
      this.reading = false;
      if (this.due.length) this.schedule();
    }
  }

  // --- the heap --------------------------------------------------------------------------------

  private push(at: number, looker: Looker): void {
    const { ats, lookers } = this;
    let i = ats.length;
    ats.push(at);
    lookers.push(looker);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (ats[parent]! <= at) break;
      ats[i] = ats[parent]!;
      lookers[i] = lookers[parent]!;
      i = parent;
    }
    ats[i] = at;
    lookers[i] = looker;
  }

  private pop(): Looker {
    const { ats, lookers } = this;
    const top = lookers[0]!;
    const lastAt = ats.pop()!;
    const last = lookers.pop()!;
    const n = ats.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && ats[child + 1]! < ats[child]!) child++;
        if (ats[child]! >= lastAt) break;
        ats[i] = ats[child]!;
        lookers[i] = lookers[child]!;
        i = child;
      }
      ats[i] = lastAt;
      lookers[i] = last;
    }
    return top;
  }
}
