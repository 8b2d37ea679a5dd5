// Progress of the run, polled from the database: how many workflows finished, how many operations
// are recorded, and when anything last moved (stall detection: a workflow inserted, one changing
// status, e.g. suspended or resumed, or an operation recorded).
import type { HarnessDb } from './db.js';

export class Monitor {
  done = 0;
  topDone = 0;
  ops = 0;
  /** Workflow rows by status, as a comparable text: a start, a suspend or a resume moves it. */
  private statuses = '';
  lastProgressAt = Date.now();
  /** When a poll last succeeded (a monitor that cannot poll sees no progress: the stall dump says so). */
  lastPollAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private lastLogAt = 0;

  constructor(
    private readonly db: HarnessDb,
    private readonly weft: string,
    private readonly log: ((m: string) => void) | null,
    private readonly total: number,
  ) {}

  start(everyMs = 1000): void {
    this.timer = setInterval(() => {
      this.polling ??= this.poll()
        .catch(() => undefined)
        .finally(() => (this.polling = undefined));
    }, everyMs);
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.polling;
  }

  async poll(): Promise<void> {
    const [r] = await this.db.query<{ done: number; top_done: number; ops: number; statuses: string | null }>(
      `SELECT count(*) FILTER (WHERE status IN ('completed','failed','cancelled','timed_out'))::int AS done,
              count(*) FILTER (WHERE status IN ('completed','failed','cancelled','timed_out') AND parent_id IS NULL)::int AS top_done,
              (SELECT count(*) FROM ${this.weft}.weft_operations)::int AS ops,
              (SELECT string_agg(status || ':' || n, ',' ORDER BY status)
                 FROM (SELECT status, count(*) AS n FROM ${this.weft}.weft_workflows GROUP BY status) s) AS statuses
       FROM ${this.weft}.weft_workflows`,
      [],
      10_000,
    );
    const statuses = r.statuses ?? '';
    if (r.done !== this.done || r.ops !== this.ops || statuses !== this.statuses) this.lastProgressAt = Date.now();
    this.statuses = statuses;
    this.lastPollAt = Date.now();
    this.done = r.done;
    this.topDone = r.top_done;
    this.ops = r.ops;
    if (this.log && Date.now() - this.lastLogAt > 10_000) {
      this.lastLogAt = Date.now();
      this.log(`progress: ${this.done}/${this.total} workflows finished, ${this.ops} operations recorded`);
    }
  }
}
