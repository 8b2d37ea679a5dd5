interface Pending<C, R> {
  request: C;
  resolve(result: R): void;
  reject(err: unknown): void;
}

export interface BatcherOptions {
  /** Requests per statement (default 256). */
  maxBatch?: number;
  /** Statements out at once (default 2). */
  maxInFlight?: number;
  /**
   * A request that finds a statement free waits for the end of the event loop's turn, so that
   * the requests made in the same turn share its statement. The runs a statement's outcomes
   * resume submit their next commits one by one, a few microtasks apart: without it the first
   * took the free statement alone and the rest waited for one to come back (default false).
   */
  gather?: boolean;
  /**
   * Requests a statement left behind (more than `maxBatch`, or a key already in it) wait for it to
   * come back instead of going beside it, so that a later statement starts after the earlier one
   * committed: rows written in the order they were asked for (a start's `created_at`, by which a
   * queue admits FIFO and `list` orders). Default false.
   */
  ordered?: boolean;
  /**
   * With this many requests (or more) waiting and more than one statement free, the requests are
   * shared evenly among the free statements instead of all going in the first: they run side by
   * side and each comes back sooner (docs/decisions/0068). Not with `ordered`. Default: never.
   */
  spread?: number;
}

/**
 * Group commit for any statement that takes many requests at once: requests made while
 * `maxInFlight` statements are out wait and then go together. Alone, a request goes at once (with
 * `gather`, at the end of the event loop's turn), so latency at low load is one round trip. Two
 * requests with the same key never share a statement (their outcome would depend on order inside
 * it). See docs/decisions/0001-group-commit.md and 0062-commits-of-one-turn-go-together.md.
 */
export class Batcher<C, R> {
  private queue: Array<Pending<C, R>> = [];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  /** A pump is set for the end of this turn (gather). */
  private pumpAtTurnEnd = false;
  /** Statements sent, for benchmarks and metrics. */
  statements = 0;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;
  private readonly gather: boolean;
  private readonly ordered: boolean;
  private readonly spread: number;
  /** A statement in flight left requests behind (ordered): nothing goes until it is back. */
  private leftBehind = false;

  constructor(
    private readonly sendMany: (requests: C[]) => Promise<R[]>,
    private readonly keyOf: (request: C) => string,
    { maxBatch = 256, maxInFlight = 2, gather = false, ordered = false, spread = Infinity }: BatcherOptions = {},
  ) {
    this.maxBatch = maxBatch;
    this.maxInFlight = maxInFlight;
    this.gather = gather;
    this.ordered = ordered;
    this.spread = ordered ? Infinity : spread;
  }

  submit(request: C): Promise<R> {
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      if (!this.gather) return this.pump();
      if (this.pumpAtTurnEnd) return;
      this.pumpAtTurnEnd = true;
      setImmediate(() => {
        this.pumpAtTurnEnd = false;
        this.pump();
      });
    });
  }

  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0 && !this.leftBehind) {
      const free = this.maxInFlight - this.inFlight;
      const share = free > 1 && this.queue.length >= this.spread ? Math.ceil(this.queue.length / free) : this.maxBatch;
      const batch = this.takeBatch(Math.min(share, this.maxBatch));
      const leftBehind = this.ordered && this.queue.length > 0;
      this.leftBehind = leftBehind;
      this.inFlight++;
      void this.send(batch).finally(() => {
        this.inFlight--;
        if (leftBehind) this.leftBehind = false;
        this.pump();
        if (this.inFlight === 0 && this.queue.length === 0) this.idleWaiters.splice(0).forEach((w) => w());
      });
    }
  }

  /** Next batch in arrival order, at most `max` requests and one request per key. */
  private takeBatch(max: number): Array<Pending<C, R>> {
    const batch: Array<Pending<C, R>> = [];
    const keys = new Set<string>();
    const rest: Array<Pending<C, R>> = [];
    for (const p of this.queue) {
      const key = this.keyOf(p.request);
      if (batch.length < max && !keys.has(key)) {
        keys.add(key);
        batch.push(p);
      } else rest.push(p);
    }
    this.queue = rest;
    return batch;
  }

  private async send(batch: Array<Pending<C, R>>): Promise<void> {
    try {
      this.statements++;
      const results = await this.sendMany(batch.map((p) => p.request));
      results.forEach((r, i) => batch[i].resolve(r));
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      // One bad request must not fail its neighbours: isolate by sending each alone.
      await Promise.all(
        batch.map(async (p) => {
          try {
            this.statements++;
            const [r] = await this.sendMany([p.request]);
            p.resolve(r);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }
}
