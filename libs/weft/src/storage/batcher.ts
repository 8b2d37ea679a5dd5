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
  /** A statement in flight left requests behind (ordered): nothing goes until it is back. */
  private leftBehind = false;

  constructor(
    private readonly sendMany: (requests: C[]) => Promise<R[]>,
    private readonly keyOf: (request: C) => string,
    { maxBatch = 256, maxInFlight = 2, gather = false, ordered = false }: BatcherOptions = {},
  ) {
    this.maxBatch = maxBatch;
    this.maxInFlight = maxInFlight;
    this.gather = gather;
    this.ordered = ordered;
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
      const batch = this.takeBatch();
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

  /** Next batch in arrival order, at most one request per key. */
  private takeBatch(): Array<Pending<C, R>> {
    const batch: Array<Pending<C, R>> = [];
    const keys = new Set<string>();
    const rest: Array<Pending<C, R>> = [];
    for (const p of this.queue) {
      const key = this.keyOf(p.request);
      if (batch.length < this.maxBatch && !keys.has(key)) {
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
