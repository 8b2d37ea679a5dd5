import type { AdvanceCommand, AdvanceOutcome, InboxMessage } from '../../storage/types.js';
import type { OperationRecord } from '../../common/types.js';
import { OPERATION_KINDS, type WaitKind } from '../../common/operation-kinds.js';
import { ReplayDriver, ReplayTarget } from './replay-driver.js';
import type { TimerHooks } from '../local-timers.js';
import type { WeftLogger, WorkflowDefinition, WorkflowInstance } from '../../common/types.js';
import type { EngineTracing, WorkflowTrace } from '../../observability/tracing.js';

export type Change = Omit<AdvanceCommand, 'workflowId' | 'expectedVersion' | 'fence'>;

/** What an execution needs from its engine. */
export interface ExecutionHost {
  /** The one commit path: the host adds the fence and sends it through the group committer. */
  commit(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome>;
  /** The commit was refused (version moved or fence lost): the execution is stale. */
  onStale(exec: Execution, reason: 'version' | 'fence' | 'error', err?: unknown): void;
  /**
   * A commit threw (database away, connection lost, or a statement the database refuses).
   * True: send the same commit again (the run keeps its computed results); false: the host
   * has stopped the run and dealt with it.
   */
  onCommitError(exec: Execution, err: unknown): boolean;
  onParked(exec: Execution): void;
  /** Timers of its waits, armed to their due time by the engine (local-timers.ts). */
  readonly timers: TimerHooks;
  /** Replay met a different call than the history holds: suspend the workflow. */
  onNonDeterminism(exec: Execution, err: Error): void;
  /** May a step body start now? False deposes the workflow here (ownership). */
  mayRun(exec: Execution): boolean;
  stepFinished(seconds: number): void;
  /** Delivers buffered messages to a run that waits (signals, updates, child notices). */
  pump(exec: Execution): void;
  /**
   * A failed update handler may have changed the instance: once `recorded` (its failure) is
   * durable, the run is rebuilt from history; until then nothing else of it runs.
   */
  rebuild(exec: Execution, recorded: Promise<void>): void;
  /** Replays a recorded signal/update delivery into the instance. */
  applyDelivery(exec: Execution, rec: OperationRecord): void;
  /** ctx.continueAsNew: end this run and start the next one (see continue-as-new.ts). */
  continueAsNew(exec: Execution, input: unknown): void;
  /** Starts a child workflow for ctx.startChild; resolves with its id. */
  startChild(exec: Execution, seq: number, type: string, input: unknown, opts: { workflowId?: string }): Promise<string>;
  readonly maxPayloadBytes: number;
  readonly logger: WeftLogger;
  readonly options: { readonly tracing: EngineTracing };
}


/** A pending live wait at one sequence number. `resolve` gets the recorded result. */
export interface Wait {
  kind: WaitKind;
  /** Signal name (waitForSignal) or child workflow id (childResult). */
  name: string;
  /** condition(): re-evaluated after every delivery. */
  pred?: () => boolean;
  /** The timer kind that ends the wait, if it has a timeout. */
  timer?: 'sleep' | 'message-timeout';
  resolve(value: unknown): void;
}

/** A promise that never settles: what ctx calls return once an execution has been stopped. */
export const NEVER: Promise<never> = new Promise<never>(() => undefined);

const LIST_FIELDS = ['operations', 'deleteTimers', 'timers', 'messages', 'consume'] as const;

function merge(into: Change, c: Change): Change {
  const out: Change = { ...into };
  if (c.status !== undefined) out.status = c.status;
  if (c.output !== undefined) out.output = c.output;
  if (c.error !== undefined) out.error = c.error;
  if (c.completed) out.completed = true;
  if (c.clearTimers) out.clearTimers = true;
  if (c.continueAsNew) out.continueAsNew = c.continueAsNew;
  for (const f of LIST_FIELDS) {
    const add = c[f];
    if (add?.length) (out as Record<string, unknown[]>)[f] = [...(into[f] ?? []), ...add];
  }
  return out;
}

const isDeprecatedMarker = (op: OperationRecord | undefined) =>
  op?.kind === 'patch' && (op.result as { deprecated?: boolean } | null)?.deprecated === true;

/** One run, as started or as loaded: what an Execution continues (replaying `history` first). */
export interface ExecutionRun {
  workflowId: string;
  definition: WorkflowDefinition;
  input: unknown;
  runNumber: number;
  version: number;
  parentId: string | null;
  /** Recorded operations by seq; none for a new run. */
  history?: Map<number, OperationRecord>;
  /** Pending timers by seq. */
  timers?: Map<number, Date>;
  /** The database clock when the run was loaded (the epoch for a new run). */
  loadedAtDbNow?: Date;
  /** Whether timer rows may exist for it: false only for a run its start launched with none (default true). */
  storedTimers?: boolean;
}

/**
 * One workflow's run in memory: its history, version and serialized commit queue. At most one
 * commit per execution is in flight; changes queued meanwhile are merged into the next one.
 */
export class Execution implements ReplayTarget {
  readonly abort = new AbortController();
  state: 'active' | 'stopped' | 'finished' = 'active';
  /** Claim epoch this run was launched under (wake ownership check). */
  epoch: string | undefined;
  nextSeq = 0;
  inflightSteps = 0;
  parked = false;
  readonly waits = new Map<number, Wait>();
  readonly firedTimers = new Set<number>();
  /** Buffered messages not yet consumed, in the order they became visible here. */
  inbox: InboxMessage[] = [];
  /**
   * Every message id this run took in. A message's id is drawn before its transaction commits,
   * so a lower id can become visible after a higher one: a high-water mark would skip it for
   * good. Grows with the messages a run receives, as its history does with those it consumes.
   */
  private readonly inboxSeen = new Set<string>();
  /** nextSeq when run() was called (see mayDeliver); undefined before. */
  private codeFrom: number | undefined;
  /** Child ids this run's startChild calls got, recorded yet or not (see childIds). */
  private readonly startedChildren = new Set<string>();
  /** The run ended and its children were closed: a child start that lands now is closed at once. */
  childrenClosed = false;
  instance: WorkflowInstance | undefined;
  replay: ReplayDriver | undefined;
  /** Query replays: nothing is ever run live or written. */
  readOnly = false;
  /** Why a query replay could not finish (non-determinism). */
  readOnlyFailure: Error | undefined;
  /** Its spans (observability/tracing.ts); undefined when nothing is traced. */
  trace: WorkflowTrace | undefined;
  /** Loaded from storage: the stored traceparent its span links to (or null); undefined when not loaded. */
  traceContext: string | null | undefined;
  /** Resolves when the replay driver has released all history. */
  replayRun: Promise<void> | undefined;
  /** Next resolution number (see ReplayDriver). */
  nextEvent: number;
  /** now/random/uuid values: recorded with the next commit, so they cost no round trip. */
  private lazyOps: OperationRecord[] = [];
  private queue: Array<{ change: Change; resolve(): void }> = [];
  private committing = false;
  private flushScheduled = false;
  private parkCheckScheduled = false;
  readonly maxRecordedSeq: number;

  readonly workflowId: string;
  readonly definition: WorkflowDefinition;
  readonly input: unknown;
  readonly runNumber: number;
  /** The row's version as this run last wrote it (the compare-and-swap of its next commit). */
  version: number;
  readonly parentId: string | null;
  readonly history: Map<number, OperationRecord>;
  readonly timers: Map<number, Date>;
  readonly loadedAtDbNow: Date;
  /**
   * Whether weft_timers may hold rows of this workflow: its end deletes them only then. A run its
   * start launched with no deadline and that never waited with a timer has none, and its last
   * commit skips that part of the statement (about a fifth of it).
   */
  mayHaveStoredTimers: boolean;

  constructor(
    readonly host: ExecutionHost,
    run: ExecutionRun,
  ) {
    this.workflowId = run.workflowId;
    this.definition = run.definition;
    this.input = run.input;
    this.runNumber = run.runNumber;
    this.version = run.version;
    this.parentId = run.parentId;
    const history = (this.history = run.history ?? new Map());
    this.timers = run.timers ?? new Map();
    this.loadedAtDbNow = run.loadedAtDbNow ?? new Date(0);
    this.mayHaveStoredTimers = run.storedTimers ?? true;
    this.maxRecordedSeq = history.size ? Math.max(...history.keys()) : -1;
    let maxEvent = -1;
    for (const op of history.values()) maxEvent = Math.max(maxEvent, op.event ?? op.seq);
    this.nextEvent = maxEvent + 1;
  }

  get isReplaying(): boolean {
    return this.replay !== undefined && !this.replay.done;
  }

  /**
   * Hands a live result to the code (a step's, a timer's, a child start's) once the replay has
   * released every recorded operation: what history holds happened while this operation was
   * pending (it never resolved in the run that recorded it), so the code must see all of it
   * before going on, e.g. a delivery recorded after a step the draining engine never ran
   * (decision 0002). At once when not replaying.
   */
  afterReplay(): Promise<void> | undefined {
    return this.replay && !this.replay.done ? this.replay.finished : undefined;
  }

  /** run() is being called now: its code starts at the current seq. */
  codeBegins(): void {
    this.codeFrom = this.nextSeq;
  }

  /**
   * Deliveries happen before run() (a start's own messages) or once the code has made its first
   * ctx call, never in between: a replay applies the deliveries recorded before the code's first
   * call before run(), so one made after run() began but before that call would be replayed in
   * the wrong place (before run() set its state up).
   */
  get mayDeliver(): boolean {
    return this.codeFrom === undefined || this.nextSeq > this.codeFrom;
  }

  isActive(): boolean {
    return this.state === 'active';
  }

  isStopped(): boolean {
    return this.state === 'stopped';
  }

  applyDelivery(rec: OperationRecord): void {
    this.host.applyDelivery(this, rec);
  }

  /**
   * The next sequence number for a call other than a patch check. A marker that
   * ctx.deprecatePatch recorded is passed over when the code no longer makes that call (the
   * patch's last phase removed it, docs/versioning.md); any other recorded operation is the
   * code's to match.
   */
  takeSeq(): number {
    this.skipDeprecatedMarkers();
    return this.nextSeq++;
  }

  skipDeprecatedMarkers(): void {
    while (this.nextSeq <= this.maxRecordedSeq && isDeprecatedMarker(this.history.get(this.nextSeq))) this.nextSeq++;
  }

  nonDeterminism(err: Error): void {
    this.host.onNonDeterminism(this, err);
  }

  /** Adds messages fetched from storage, each once (by id, whatever order they come in). */
  addInbox(messages: InboxMessage[]): void {
    for (const m of messages) {
      if (this.inboxSeen.has(m.id)) continue;
      this.inboxSeen.add(m.id);
      this.inbox.push(m);
    }
  }

  /** Has this run taken in the message? */
  hasSeen(messageId: string): boolean {
    return this.inboxSeen.has(messageId);
  }

  /** The next run of a continue-as-new: what the ended run took in is not taken in again. */
  inheritSeen(ended: Execution): void {
    for (const id of ended.inboxSeen) this.inboxSeen.add(id);
  }

  childStarted(childId: string): void {
    this.startedChildren.add(childId);
  }

  /**
   * The children of this run, for the parent-close policy: those its history records (an earlier
   * engine may have started them) and those started here. Never another run's of the same id.
   */
  childIds(): string[] {
    const ids = new Set(this.startedChildren);
    for (const op of this.history.values()) {
      const id = op.kind === 'startChild' ? (op.result as { workflowId?: string } | null)?.workflowId : undefined;
      if (id) ids.add(id);
    }
    return [...ids];
  }

  /**
   * Records a live resolution: the op gets the next event number, is queued for commit with
   * `extra` (consumption, timer deletion) and lands in the in-memory history at once.
   */
  record(op: OperationRecord, extra: Change = {}): Promise<void> {
    const withEvent = { ...op, event: this.nextEvent++ };
    this.history.set(op.seq, withEvent);
    return this.commit({ ...extra, operations: extra.operations?.length ? [withEvent, ...extra.operations] : [withEvent] });
  }

  /** Resolves a pending live wait with `result`, recording it (and `extra`) first. */
  resolveWait(seq: number, result: unknown, extra: Change = {}): boolean {
    const w = this.waits.get(seq);
    if (!w || this.state !== 'active') return false;
    this.waits.delete(seq);
    this.parked = false;
    if (w.timer) this.host.timers.cleared(this.workflowId, seq);
    const deleteTimers = w.timer ? [{ kind: w.timer, seq }] : [];
    void this.record(
      { seq, kind: w.kind, name: w.name, status: 'completed', result },
      { ...extra, deleteTimers: [...deleteTimers, ...(extra.deleteTimers ?? [])] },
    );
    const replayed = this.afterReplay();
    if (replayed) void replayed.then(() => w.resolve(result));
    else w.resolve(result);
    return true;
  }

  recordLazy(op: OperationRecord): void {
    const withEvent = { ...op, event: this.nextEvent++ };
    this.lazyOps.push(withEvent);
    this.history.set(op.seq, withEvent);
  }

  /** Queues a change; resolves once it is durable. Never settles if the execution goes stale. */
  commit(change: Change, terminal = false): Promise<void> {
    if (this.readOnly) return NEVER;
    if (this.state !== 'active' && !(terminal && this.state === 'finished')) return NEVER;
    if (change.timers?.length) this.mayHaveStoredTimers = true;
    return new Promise<void>((resolve) => {
      this.queue.push({ change, resolve });
      this.scheduleFlush();
    });
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

  /** Resolves once everything queued so far is durable (never, if the execution goes stale). */
  durable(): Promise<void> {
    if (this.queue.length === 0 && !this.committing && this.lazyOps.length === 0) return Promise.resolve();
    return this.commit({});
  }

  /** Something is still to be written, or being written (graceful shutdown waits for it). */
  get hasPendingCommits(): boolean {
    return this.committing || this.flushScheduled || this.queue.length > 0;
  }

  private async flush(): Promise<void> {
    this.committing = true;
    try {
      while (this.queue.length > 0 && this.state !== 'stopped') {
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
          this.stop();
          this.host.onStale(this, outcome.reason === 'consume' ? 'version' : outcome.reason);
          return;
        }
        this.version = outcome.version;
        for (const b of batch) b.resolve();
      }
    } finally {
      this.committing = false;
      this.scheduleParkCheck();
    }
  }

  /**
   * Sends one commit; when it throws, sends the very same commit again with backoff for as
   * long as the host allows (docs/concepts.md: a finished body is not re-run because its commit
   * failed for a transient reason). If an earlier try did land, the retry's version check refuses it
   * and the run is re-read from storage, which then holds the result. Null: given up or stopped.
   */
  private async commitAgainOnError(change: Change): Promise<AdvanceOutcome | null> {
    for (let delayMs = 100; ; delayMs = Math.min(delayMs * 2, 5_000)) {
      try {
        return await this.host.commit(this, { ...change, workflowId: this.workflowId, expectedVersion: this.version });
      } catch (err) {
        if (this.isStopped() || !this.host.onCommitError(this, err)) return null;
        await new Promise((r) => setTimeout(r, delayMs * (0.5 + Math.random())));
        if (this.isStopped()) return null;
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
    if (outcome?.ok) this.version = outcome.version;
  }

  /**
   * Drops the run: every pending and future ctx call never settles. `abort` also aborts
   * ctx.signal (cancel, timeout, lost ownership); eviction of a parked run does not.
   */
  stop(abort = true): void {
    if (this.state === 'active') this.state = 'stopped';
    this.queue = [];
    this.waits.clear();
    if (abort && !this.abort.signal.aborted) this.abort.abort();
    this.trace?.end('stopped');
  }

  wait(seq: number, wait: Omit<Wait, 'resolve'>): Promise<unknown> {
    if (this.state !== 'active') return NEVER;
    return new Promise<unknown>((resolve) => {
      this.waits.set(seq, { ...wait, resolve });
      this.scheduleParkCheck();
      this.host.pump(this);
    });
  }

  /** A due timer for a live wait: its timeout outcome (null, false) or a finished sleep. */
  fireTimer(seq: number): boolean {
    const w = this.waits.get(seq);
    if (!w) return false;
    return this.resolveWait(seq, OPERATION_KINDS[w.kind].onTimer ?? null);
  }

  /** Parked = nothing running, nothing committing, only waits: the engine may evict it. */
  scheduleParkCheck(): void {
    if (this.parkCheckScheduled) return;
    this.parkCheckScheduled = true;
    setImmediate(() => {
      this.parkCheckScheduled = false;
      const parked =
        this.state === 'active' && this.inflightSteps === 0 && !this.committing && this.queue.length === 0 && this.waits.size > 0;
      if (parked && !this.parked) {
        this.parked = true;
        this.trace?.park();
        this.host.onParked(this);
      } else if (!parked) this.parked = false;
      if (parked) this.host.pump(this);
    });
  }
}
