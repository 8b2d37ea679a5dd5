import type { OperationRecord } from '../../common/types.js';
import { advanceCommand } from '../../storage/advance-command.js';
import type { AdvanceCommand, AdvanceOutcome } from '../../storage/types.js';

/** What a run writes in one commit: an advance without its row, version and fence. */
export type Change = Omit<AdvanceCommand, 'workflowId' | 'expectedVersion' | 'fence'>;

/** The run a queue writes for. */
export interface QueueOwner {
  readonly workflowId: string;
  isStopped(): boolean;
  stop(): void;
  scheduleParkCheck(): void;
}

/** Where the queue sends its commits (the run's host: ExecutionHost). */
export interface QueueHost {
  commit(owner: QueueOwner, command: AdvanceCommand): Promise<AdvanceOutcome>;
  onCommitError(owner: QueueOwner, err: unknown): boolean;
  /** Waits before a failed commit is sent again (cut short when the engine stops). */
  pauseBeforeRetry(ms: number): Promise<void>;
  onStale(owner: QueueOwner, reason: 'version' | 'fence'): void;
}

const LIST_FIELDS = ['operations', 'deleteTimers', 'timers', 'messages', 'consume', 'events', 'streams', 'sends', 'updateResults'] as const;

function merge(into: Change, c: Change): Change {
  const out = mergeFields(into, c);
  return c.updateResults?.length && out.consume?.length ? foldUpdateResults(out) : out;
}

function mergeFields(into: Change, c: Change): Change {
  const out: Change = { ...into };
  if (c.status !== undefined) out.status = c.status;
  if (c.output !== undefined) out.output = c.output;
  if (c.error !== undefined) out.error = c.error;
  if (c.completed) out.completed = true;
  if (c.clearTimers) out.clearTimers = true;
  if (c.continueAsNew) out.continueAsNew = c.continueAsNew;
  if (c.attributes) out.attributes = into.attributes ? { ...into.attributes, ...c.attributes } : c.attributes;
  for (const f of LIST_FIELDS) {
    const add = c[f];
    if (add?.length) (out as Record<string, unknown[]>)[f] = [...(into[f] ?? []), ...add];
  }
  return out;
}

/**
 * An async update that began and ended within one commit: its outcome goes into its consumption
 * (the statement's parts all see the row as it was, pending, so the result part would miss it).
 */
function foldUpdateResults(c: Change): Change {
  const results = new Map(c.updateResults!.map((u) => [u.id, u]));
  const consume = c.consume!.map((m) => {
    const u = results.get(m.id);
    if (!u) return m;
    results.delete(m.id);
    return { ...m, status: u.status, result: u.result };
  });
  return { ...c, consume, updateResults: results.size ? [...results.values()] : undefined };
}

/**
 * One run's commits, serialized: at most one in flight; changes queued meanwhile are merged into
 * the next one. It holds the row's version as the run last wrote it (the compare-and-swap of
 * its next commit).
 */
export class CommitQueue {
  private queue: Array<{ change: Change; resolve(): void }> = [];
  /** now/random/uuid values: recorded with the next commit, so they cost no round trip. */
  private lazyOps: OperationRecord[] = [];
  private committing = false;
  /** Waiting for the commit in flight to end (commitThrough). */
  private turnWaiters: Array<() => void> = [];
  private flushScheduled = false;
  private _version: number;

  constructor(
    private readonly owner: QueueOwner,
    private readonly host: QueueHost,
    version: number,
  ) {
    this._version = version;
  }

  get version(): number {
    return this._version;
  }

  /** Nothing queued, nothing lazy, nothing in flight. */
  get idle(): boolean {
    return this.queue.length === 0 && !this.committing && this.lazyOps.length === 0;
  }

  /** Nothing queued and nothing in flight (the park check). */
  get empty(): boolean {
    return !this.committing && this.queue.length === 0;
  }

  /** Something is still to be written, or being written. */
  get pending(): boolean {
    return this.committing || this.flushScheduled || this.queue.length > 0;
  }

  /** Queues a change; resolves once it is durable. */
  enqueue(change: Change): Promise<void> {
    return new Promise<void>((resolve) => {
      this.queue.push({ change, resolve });
      this.scheduleFlush();
    });
  }

  /** A value recorded with whatever is committed next. */
  addLazy(op: OperationRecord): void {
    this.lazyOps.push(op);
  }

  /** The run stopped: what is queued is never written (and never resolves). */
  drop(): void {
    this.queue = [];
  }

  /**
   * Flushes on the next macrotask, so changes the run makes before its next wait (e.g. a
   * step's record and the completion right after it) share one commit.
   */
  private scheduleFlush(): void {
    if (this.committing || this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (!this.committing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.committing = true;
    try {
      while (this.queue.length > 0 && !this.owner.isStopped()) {
        const batch = this.queue.splice(0);
        const lazy = this.lazyOps;
        this.lazyOps = [];
        // Most flushes carry one change and no lazy values: sent as it is, not copied.
        const change: Change =
          lazy.length === 0 && batch.length === 1
            ? batch[0].change
            : batch.reduce((c, b) => merge(c, b.change), { operations: lazy } as Change);
        const outcome = await this.commitAgainOnError(change);
        if (!outcome) return;
        if (!outcome.ok) {
          // A refused consume must not cost what came before it (a finished step's result).
          if (outcome.reason === 'consume') await this.commitBeforeConsume(batch, lazy);
          this.owner.stop();
          this.host.onStale(this.owner, outcome.reason === 'consume' ? 'version' : outcome.reason);
          return;
        }
        this._version = outcome.version;
        for (const b of batch) b.resolve();
      }
    } finally {
      this.committing = false;
      this.handOver();
      this.owner.scheduleParkCheck();
    }
  }

  /** The commit in flight ended: a waiting commitThrough goes next, else queued changes flush. */
  private handOver(): void {
    const next = this.turnWaiters.shift();
    if (next) next();
    else if (this.queue.length > 0) this.scheduleFlush();
  }

  /**
   * Commits `change`, with everything queued and every lazy value, through `send` instead of the
   * host: a transactional step's commit, written on its own transaction's connection (which
   * `send` commits). It takes its turn like any commit, so the version it compares against is the
   * one the run last wrote. Ok: the queued changes are durable. Refused (version, fence): the run
   * is stale, as for any refused commit. Thrown: nothing was taken, the queued changes stay
   * queued; the caller decides (the transaction rolled back and is tried again, or the outcome
   * is unknown and the run is re-read from storage).
   */
  async commitThrough(change: Change, send: (command: AdvanceCommand) => Promise<AdvanceOutcome>): Promise<AdvanceOutcome> {
    await this.takeTurn();
    return this.commitHeld(change, send, false);
  }

  /** Waits for the commit in flight to end and holds the run's turn: nothing else of the run commits until commitHeld ends it. */
  async takeTurn(): Promise<void> {
    while (this.committing) await new Promise<void>((resolve) => this.turnWaiters.push(resolve));
    this.committing = true;
  }

  /**
   * commitThrough's commit, the turn held (takeTurn). `stopOnThrow`: the run's code went on past
   * `change` (a riding transactional record), so a throw stops the run before anything else of it
   * can commit: what is queued is dropped, never sent without the transaction it followed.
   */
  async commitHeld(
    change: Change,
    send: (command: AdvanceCommand) => Promise<AdvanceOutcome>,
    stopOnThrow: boolean,
  ): Promise<AdvanceOutcome> {
    const batch = this.queue.splice(0);
    const lazy = this.lazyOps;
    this.lazyOps = [];
    try {
      // A riding record came before what the code queued after it; otherwise the queued came first.
      const changes = batch.map((b) => b.change);
      const merged = (stopOnThrow ? [change, ...changes] : [...changes, change]).reduce(merge, { operations: lazy } as Change);
      const outcome = await send(advanceCommand(this.owner.workflowId, this._version, merged));
      if (outcome.ok) {
        this._version = outcome.version;
        for (const b of batch) b.resolve();
      } else {
        this.owner.stop();
        this.host.onStale(this.owner, outcome.reason === 'consume' ? 'version' : outcome.reason);
      }
      return outcome;
    } catch (err) {
      if (stopOnThrow) this.owner.stop();
      else {
        this.queue.unshift(...batch);
        this.lazyOps = [...lazy, ...this.lazyOps];
      }
      throw err;
    } finally {
      this.committing = false;
      this.handOver();
      this.owner.scheduleParkCheck();
    }
  }

  /**
   * Sends one commit; when it throws, sends the very same commit again with backoff for as
   * long as the host allows (docs/concepts.md: a finished body is not re-run because its commit
   * failed for a transient reason). If an earlier try did land, the retry's version check refuses it
   * and the run is re-read from storage, which then holds the result. Null: given up or stopped.
   */
  private async commitAgainOnError(change: Change): Promise<AdvanceOutcome | null> {
    const owner = this.owner;
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 5_000)) {
      try {
        return await this.host.commit(owner, advanceCommand(owner.workflowId, this._version, change));
      } catch (err) {
        if (owner.isStopped() || !this.host.onCommitError(owner, err)) return null;
        await this.host.pauseBeforeRetry(delayMs * (0.5 + Math.random()));
        if (owner.isStopped()) return null;
      }
    }
  }

  /**
   * The changes queued before the first one that consumes a message, and the now/random/uuid
   * values called before it, committed alone; what follows the refused delivery is dropped
   * (the run is re-read from storage next). A delivery only happens while no step body runs,
   * so every step that finished before it is in this prefix.
   */
  private async commitBeforeConsume(batch: Array<{ change: Change }>, lazy: OperationRecord[]): Promise<void> {
    const at = batch.findIndex((b) => b.change.consume?.length);
    if (at < 0) return;
    const seqs = (batch[at].change.operations ?? []).map((o) => o.seq);
    const firstSeq = seqs.length ? Math.min(...seqs) : Infinity;
    let prefix: Change = { operations: lazy.filter((o) => o.seq < firstSeq) };
    for (const b of batch.slice(0, at)) prefix = merge(prefix, b.change);
    if (!prefix.operations?.length && Object.keys(prefix).length === 1) return;
    const outcome = await this.commitAgainOnError(prefix);
    if (outcome?.ok) this._version = outcome.version;
  }
}
