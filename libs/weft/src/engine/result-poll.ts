// result() of a workflow that does not end here (enqueued, or run by another engine) reads its
// status now and then. Each waiter keeps its own backoff, but the reads due at one moment go as
// one statement: a thousand handles awaited on a queue's backlog cost a few statements a
// second, not a thousand round trips (docs/queues.md: they were most of a queued workload's cost).
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

/** What a read says: ended (or absent, or the read failed), or not started yet. */
export interface Look {
  ended: boolean;
  notStarted: boolean;
}

interface Waiter {
  id: string;
  resolve: (look: Look) => void;
}

export class ResultPoll {
  /** Waiters whose read is due. */
  private readonly due: Waiter[] = [];
  private scheduled = false;
  private reading = false;

  constructor(private readonly statuses: (ids: string[]) => Promise<Map<string, WorkflowStatus>>) {}

  /**
   * Whether the workflow's row reads terminal now (or absent, or the read failed: the caller's
   * own read of the row says which), read together with the others asked in the same turn of
   * the event loop, or while the previous read was out.
   */
  look(id: string): Promise<Look> {
    return new Promise((resolve) => {
      this.due.push({ id, resolve });
      this.schedule();
    });
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
      const found = await this.statuses([...new Set(batch.map((w) => w.id))]);
      for (const w of batch) {
        const s = found.get(w.id);
        w.resolve({ ended: s === undefined || isTerminal(s), notStarted: s === WorkflowStatus.Enqueued || s === WorkflowStatus.Pending });
      }
    } catch {
      for (const w of batch) w.resolve({ ended: true, notStarted: false }); // the caller's own read surfaces the error
    } finally {
      this.reading = false;
      if (this.due.length) this.schedule();
    }
  }
}
