// Progress of the run, polled from the database: how many workflows finished, how many operations
// are recorded, and when anything last moved (stall detection).
import type { HarnessDb } from './db.js';

export class Monitor {
  done = 0;
  topDone = 0;
  ops = 0;
  lastProgressAt = Date.now();
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
    const [r] = await this.db.query<{ done: number; top_done: number; ops: number }>(
      `SELECT count(*) FILTER (WHERE status IN ('completed','failed','cancelled','timed_out'))::int AS done,
              count(*) FILTER (WHERE status IN ('completed','failed','cancelled','timed_out') AND parent_id IS NULL)::int AS top_done,
              (SELECT count(*) FROM ${this.weft}.weft_operations)::int AS ops
       FROM ${this.weft}.weft_workflows`,
      [],
      10_000,
    );
    if (r.done !== this.done || r.ops !== this.ops) this.lastProgressAt = Date.now();
    this.done = r.done;
    this.topDone = r.top_done;
    this.ops = r.ops;
    if (this.log && Date.now() - this.lastLogAt > 10_000) {
      this.lastLogAt = Date.now();
      this.log(`progress: ${this.done}/${this.total} workflows finished, ${this.ops} operations recorded`);
    }
  }
}
