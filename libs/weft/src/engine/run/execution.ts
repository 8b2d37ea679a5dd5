import type { AdvanceCommand, AdvanceOutcome } from '../../storage/types.js';
import type { AppTransaction } from '../../storage/app-transaction.js';
import type { EntityManager } from 'typeorm';
import { Inbox } from './inbox.js';
import type { StepProgressRow } from '../../storage/repositories/step-progress.repository.js';
import type { ProgressSink } from './step-progress.js';
import type { ExternalCompletions } from './external-completions.js';
import { Change, CommitQueue } from './commit-queue.js';
import type { OperationRecord } from '../../common/types.js';
import { OPERATION_KINDS, type OperationKindSpec, type WaitKind } from '../../common/operation-kinds.js';
import { ReplayDriver, ReplayTarget } from './replay-driver.js';
import { CancelState } from './cancel-state.js';
import { RunSlot, type SlotState } from './run-slot.js';
import { WorkflowCancelledError } from '../../common/errors.js';
import type { TimerHooks } from '../local-timers.js';
import type { WorkflowClock } from '../../common/clock.js';
import type {
  TransactionIsolation,
  WeftLogger,
  WorkflowAttributes,
  WorkflowContext,
  WorkflowDefinition,
  WorkflowInstance,
} from '../../common/types.js';
import { workflowContextStorage } from '../als.js';
import type { EngineTracing, WorkflowTrace } from '../../observability/tracing.js';
import type { WeftHeaders } from '../../common/interceptors.js';
import { NO_HEADERS, type EngineInterceptors } from '../interceptors.js';

export type { Change };

/** A transactional step's connection and its fenced commit (transaction-step.ts). */
export interface TransactionHost {
  /** A transaction on its own connection (a bounded number at once, so the engine keeps some of its pool). */
  beginTransaction(isolation?: TransactionIsolation): Promise<AppTransaction>;
  /** Writes `command` with the run's fence on `tx` and commits `tx`; rolls it back when refused. */
  commitInTransaction(exec: Execution, command: AdvanceCommand, tx: AppTransaction, seq: number): Promise<AdvanceOutcome>;
  /** Runs the body with `manager` as the libraries' ambient transaction (typeorm-transactional, @nestjs-cls/transactional). */
  withinAmbient<T>(manager: EntityManager, fn: () => T): T;
}

/** What workflow code reaches of other workflows (ctx.startWorkflow, ctx.cancelWorkflow, ctx.signalWorkflow). */
export interface ExternalHooks {
  /** A detached start (idPolicy 'return-existing') with the starting run's headers: resolves with its id. */
  start(type: string, input: unknown, workflowId: string, headers: Record<string, string> | null): Promise<string>;
  /** Cancels it unless it already ended (then nothing); WorkflowNotFoundError when there is none. */
  cancel(workflowId: string, reason: string): Promise<void>;
  /** Its status, or null when there is no such workflow. */
  status(workflowId: string): Promise<string | null>;
}

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
  /** Waits before a failed commit is sent again (cut short when the engine stops). */
  pauseBeforeRetry(ms: number): Promise<void>;
  onParked(exec: Execution): void;
  /** A run whose queue slot was released was woken: it goes on once `exec.slotTaken()` is called. */
  wantSlot(exec: Execution): void;
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
  readonly transactions: TransactionHost;
  /** ctx.writeStream from a step body: appended at once (at least once); throws when the stream is closed. */
  appendStream(workflowId: string, key: string, value: unknown, attempt: number): Promise<void>;
  readonly external: ExternalHooks;
  readonly maxPayloadBytes: number;
  /** Where steps' heartbeats are saved, in batches (heartbeat-writer.ts). */
  readonly heartbeats: ProgressSink;
  /** Where external steps wait for engine.completeStep / failStep (external-completions.ts). */
  readonly completions: Pick<ExternalCompletions, 'wait'>;
  readonly logger: WeftLogger;
  readonly options: { readonly tracing: EngineTracing; readonly clock: WorkflowClock; readonly interceptors?: EngineInterceptors | null };
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
  /** Made inside ctx.nonCancellable: a cancel leaves it waiting. */
  shielded?: boolean;
  resolve(value: unknown): void;
}

/** A promise that never settles: what ctx calls return once an execution has been stopped. */
export const NEVER: Promise<never> = new Promise<never>(() => undefined);

const NO_ATTRIBUTES: WorkflowAttributes = Object.freeze({});

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
  /** Query replays and the replayer: nothing is ever run live or written. */
  readOnly?: boolean;
  /** Loaded or continued: the traceparent its span links to (or null); undefined otherwise. */
  traceContext?: string | null;
  /** The attributes the run begins with (its start's), before any recorded setAttributes. */
  attributes?: WorkflowAttributes;
  /** Its steps' progress an earlier owner saved, by seq (heartbeats, attempt, first start). */
  progress?: ReadonlyMap<number, StepProgressRow>;
  /** The queue that admitted it (null or absent: none, or a child on its parent's slot). */
  queue?: string | null;
  /** Loaded parked with its queue slot given back (releaseWhileWaiting). */
  slotReleased?: boolean;
  /** It holds a singleton key: its end wakes the start waiting for the key (onConflict 'queue'). */
  singleton?: boolean;
  /** Its start's headers, as stored (docs/interceptors.md); null or absent when none. */
  headers?: Record<string, string> | null;
  /** A continued run: the ended run's parent-close read, which its child starts wait for (never rejects). */
  childrenAfter?: Promise<void>;
}

/**
 * One workflow's run in memory: its history, version and serialized commit queue. At most one
 * commit per execution is in flight; changes queued meanwhile are merged into the next one.
 */
export class Execution implements ReplayTarget {
  readonly abort = new AbortController();
  private _state: 'active' | 'stopped' | 'finished' = 'active';
  /** The terminal commit once queued: durable() of a finished run is its durability. */
  private terminalCommit: Promise<void> | undefined;
  /** Claim epoch this run was launched under (wake ownership check). */
  private _epoch: string | undefined;
  private _nextSeq = 0;
  private _inflightSteps = 0;
  private _backingOff = 0;
  private _parked = false;
  private readonly _waits = new Map<number, Wait>();
  private readonly _firedTimers = new Set<number>();
  /** Its buffered messages and the ids it took in. */
  readonly inbox = new Inbox();
  /** nextSeq when run() was called (see mayDeliver); undefined before. */
  private codeFrom: number | undefined;
  /** Child ids this run's startChild calls got, recorded yet or not (see childIds). */
  private readonly startedChildren = new Set<string>();
  private _childrenClosed = false;
  private _instance: WorkflowInstance | undefined;
  /** The run's ctx: handlers run inside it (currentWorkflowContext(), @Step calls). */
  private _ctx: WorkflowContext | undefined;
  /** A validator runs now: ctx calls are refused (it must decide from state and arguments alone). */
  private _validating = false;
  /** Async update handlers begun (live or replayed) and not finished: request id to update name. */
  private readonly _openUpdates = new Map<string, string>();
  private _replay: ReplayDriver | undefined;
  /** Query replays: nothing is ever run live or written. */
  readonly readOnly: boolean;
  private _readOnlyFailure: Error | undefined;
  private _trace: WorkflowTrace | undefined;
  /** Loaded or continued: the stored traceparent its span links to (or null); undefined when new. */
  readonly traceContext: string | null | undefined;
  private _replayRun: Promise<void> | undefined;
  /** Next resolution number (see ReplayDriver). */
  private nextEvent: number;
  /** What this run set with ctx.setAttributes, folded in call order (live or replayed). */
  private _attributes: WorkflowAttributes = NO_ATTRIBUTES;
  /** Its serialized commits, and the version its next one compares against. */
  private readonly commits: CommitQueue;
  private parkCheckScheduled = false;
  readonly maxRecordedSeq: number;
  /** The queue that admitted it, whose slot it holds (null outside a queue). */
  readonly queue: string | null;
  /** Holds a singleton key (see ExecutionRun.singleton). */
  readonly holdsSingleton: boolean;
  /** Its queue slot under releaseWhileWaiting: a wake is held back until it holds one again. */
  private readonly queueSlot: RunSlot;
  /** Its cancel (docs/cancellation.md, decision 0038). */
  private readonly cancelState = new CancelState();
  /** Transactional records being committed: a cancel waits for them (their results reach the code first). */
  private committingThrough = 0;

  readonly workflowId: string;
  readonly definition: WorkflowDefinition;
  readonly input: unknown;
  readonly runNumber: number;
  readonly parentId: string | null;
  /** Its start's headers (frozen; empty when none): what run and step hooks see, what its children inherit. */
  readonly headers: WeftHeaders;
  /** What its child starts wait for (ExecutionRun.childrenAfter); undefined: nothing. */
  readonly childrenAfter: Promise<void> | undefined;
  private readonly _history: Map<number, OperationRecord>;
  private readonly _progress: ReadonlyMap<number, StepProgressRow> | undefined;
  private readonly _timers: Map<number, Date>;
  readonly loadedAtDbNow: Date;
  /**
   * Whether weft_timers may hold rows of this workflow: its end deletes them only then. A run its
   * start launched with no deadline and that never waited with a timer has none, and its last
   * commit skips that part of the statement (about a fifth of it).
   */
  private _mayHaveStoredTimers: boolean;

  constructor(
    readonly host: ExecutionHost,
    run: ExecutionRun,
  ) {
    this.workflowId = run.workflowId;
    this.definition = run.definition;
    this.input = run.input;
    this.runNumber = run.runNumber;
    this.commits = new CommitQueue(this, host, run.version);
    this.parentId = run.parentId;
    this.headers = run.headers ? Object.freeze({ ...run.headers }) : NO_HEADERS;
    this.childrenAfter = run.childrenAfter;
    this.readOnly = run.readOnly ?? false;
    this.traceContext = run.traceContext;
    if (run.attributes) this._attributes = run.attributes;
    if (run.progress?.size) this._progress = run.progress;
    const history = (this._history = run.history ?? new Map());
    this._timers = run.timers ?? new Map();
    this.loadedAtDbNow = run.loadedAtDbNow ?? new Date(0);
    this._mayHaveStoredTimers = run.storedTimers ?? true;
    this.maxRecordedSeq = history.size ? Math.max(...history.keys()) : -1;
    this.queue = run.queue ?? null;
    this.holdsSingleton = run.singleton ?? false;
    this.queueSlot = new RunSlot(run.slotReleased ?? false);
    this.nextEvent = this.scanHistory(history) + 1;
  }

  /** The highest event number recorded; notes a cancel request that the replay will meet. */
  private scanHistory(history: ReadonlyMap<number, OperationRecord>): number {
    let maxEvent = -1;
    for (const op of history.values()) {
      maxEvent = Math.max(maxEvent, op.event ?? op.seq);
      if (op.kind === 'cancelRequested') this.cancelState.requestAhead();
    }
    return maxEvent;
  }

  // --- what others read ------------------------------------------------------------------------

  get state(): 'active' | 'stopped' | 'finished' {
    return this._state;
  }
  get epoch(): string | undefined {
    return this._epoch;
  }
  get nextSeq(): number {
    return this._nextSeq;
  }
  /** Step bodies running now (no delivery while one runs). */
  get inflightSteps(): number {
    return this._inflightSteps;
  }
  /** Nothing running, nothing committing, only waits: the engine may evict it. */
  get parked(): boolean {
    return this._parked;
  }
  /** Pending live waits by seq. */
  get waits(): ReadonlyMap<number, Wait> {
    return this._waits;
  }
  /** Timers that fired before replay reached their wait: the wait resolves as fired. */
  get firedTimers(): ReadonlySet<number> {
    return this._firedTimers;
  }
  /** The run ended and its children were closed: a child start that lands now is closed at once. */
  get childrenClosed(): boolean {
    return this._childrenClosed;
  }
  get instance(): WorkflowInstance | undefined {
    return this._instance;
  }
  get replay(): ReplayDriver | undefined {
    return this._replay;
  }
  /** Why a query replay could not finish (non-determinism). */
  get readOnlyFailure(): Error | undefined {
    return this._readOnlyFailure;
  }
  /** Its spans (observability/tracing.ts); undefined when nothing is traced. */
  get trace(): WorkflowTrace | undefined {
    return this._trace;
  }
  /** Resolves when the replay driver has released all history. */
  get replayRun(): Promise<void> | undefined {
    return this._replayRun;
  }
  /** The row's version as this run last wrote it (the compare-and-swap of its next commit). */
  get version(): number {
    return this.commits.version;
  }
  /** Recorded operations by seq. */
  get history(): ReadonlyMap<number, OperationRecord> {
    return this._history;
  }
  /** Pending timers by seq (their due time). */
  get timers(): ReadonlyMap<number, Date> {
    return this._timers;
  }
  get attributes(): WorkflowAttributes {
    return this._attributes;
  }
  /** The progress an earlier owner saved of the step at `seq`, if any. */
  progressOf(seq: number): StepProgressRow | undefined {
    return this._progress?.get(seq);
  }
  get mayHaveStoredTimers(): boolean {
    return this._mayHaveStoredTimers;
  }

  // --- its life: launch, code start, end --------------------------------------------------------

  /** Launched under this claim epoch (the wake ownership check compares against it). */
  launchedUnder(epoch: string | undefined): void {
    this._epoch = epoch;
  }

  /** The run's workflow span starts (once per launch, in the launcher's context). */
  startTrace(): void {
    if (!this.readOnly) this._trace = this.host.options.tracing.run(this);
  }

  /**
   * Its code's instance is made: with history, a replay driver is set over it and the deliveries
   * recorded before the code's first call are applied. False: nothing to replay (a new run).
   */
  setUp(instance: WorkflowInstance, ctx?: WorkflowContext): boolean {
    this._instance = instance;
    this._ctx = ctx;
    if (this._history.size === 0) return false;
    this._replay = new ReplayDriver(this, this._history.values());
    this._replay.applyLeading();
    return true;
  }

  /** Runs handler code inside the run's context (as run() runs), so @Step calls and currentWorkflowContext() work there. */
  withCode<T>(fn: () => T): T {
    return this._ctx ? workflowContextStorage.run(this._ctx, fn) : fn();
  }

  /** A validator runs `fn`: ctx calls in it are refused (context.ts). */
  validate<T>(fn: () => T): T {
    this._validating = true;
    try {
      return this.withCode(fn);
    } finally {
      this._validating = false;
    }
  }

  get validating(): boolean {
    return this._validating;
  }

  /** An async update handler began (its request row is `accepted`). */
  updateOpened(messageId: string, name: string): void {
    this._openUpdates.set(messageId, name);
  }

  /** It finished: false when it was not open (already closed, or closed by the run's end). */
  updateClosed(messageId: string): boolean {
    return this._openUpdates.delete(messageId);
  }

  /** The run ends with handlers still going: their callers are told so, in the ending commit. */
  abandonUpdates(): Array<{ id: string; status: 'failed'; result: unknown }> {
    const out = [...this._openUpdates].map(([id, name]) => ({
      id,
      status: 'failed' as const,
      result: {
        error: {
          name: 'UpdateAbandonedError',
          message: `the workflow run ended before update handler "${name}" finished`,
        },
      },
    }));
    this._openUpdates.clear();
    return out;
  }

  /** Releases the history in live order; `then` runs once all of it is out. */
  replayHistory(then: () => void): Promise<void> {
    return (this._replayRun = (this._replay?.run() ?? Promise.resolve()).then(then));
  }

  /** Its end is decided (completion, failure, suspension, continue-as-new, rebuild): only its terminal commit may still be written. */
  end(): void {
    this._state = 'finished';
  }

  /** A read-only replay met a divergence: it stops and keeps the reason. */
  failReadOnly(err: Error): void {
    this.stop();
    this._readOnlyFailure = err;
  }

  /** The parent-close policy is applied now: the children to close (a later start is closed at once). */
  closeChildren(): string[] {
    this._childrenClosed = true;
    return this.childIds();
  }

  /** ctx.setAttributes took effect (checked, then recorded or replayed): the run's attributes now. */
  attributesSet(attributes: WorkflowAttributes): void {
    this._attributes = attributes;
  }

  // --- cancellation (docs/cancellation.md) ----------------------------------------------------------

  /** The cancel applied to this run (live or replayed), if any. */
  get cancelled(): WorkflowCancelledError | undefined {
    return this.cancelState.cancelled;
  }

  /**
   * Replaying, with a cancel request ahead in the history: a cancellable call the replay reaches
   * without a record was pending when the cancel came, so it starts nothing and waits for it.
   */
  get cancelAhead(): boolean {
    return this.cancelState.ahead;
  }

  /** The signal of step bodies outside ctx.nonCancellable: aborted by the cancel, or when the run stops. */
  get cancelSignal(): AbortSignal {
    return this.cancelState.signal;
  }

  /** ctx.nonCancellable was entered in this run: only then do calls look for its scope. */
  get shieldsUsed(): boolean {
    return this.cancelState.shieldsUsed;
  }

  /** ctx.nonCancellable is entered. */
  shieldEntered(): void {
    this.cancelState.shieldEntered();
  }

  /** `p`, or WorkflowCancelledError as soon as the cancel is applied, whichever comes first. */
  cancellable<T>(p: Promise<T>): Promise<T> {
    return this.cancelState.cancellable(p);
  }

  /**
   * A cancel request is in the inbox: applied in a turn of its own, so that the code has run to
   * its next wait (as the replay driver lets it between two releases) and it takes the same seq
   * on replay. Not while replaying, before the code's first call, or while a transactional record
   * is being committed (its result must reach the code first); the next pump tries again.
   */
  scheduleCancel(): void {
    this.cancelState.schedule(() => {
      if (this._state !== 'active' || this.readOnly || this.isReplaying || !this.mayDeliver || this.committingThrough > 0) return;
      const m = this.inbox.takeCancel();
      if (!m) return;
      if (this.cancelState.cancelled) {
        // Asked again after a continue-as-new carried the first request over: nothing more to do.
        void this.commit({ consume: [{ id: m.id, seq: null, status: 'done' }] });
        return;
      }
      const seq = this.takeSeq(false);
      const reason = typeof m.payload === 'string' ? m.payload : 'Cancelled';
      this.applyCancel(reason, seq, m.id);
    });
  }

  /** The replay reached the recorded cancel request at its seq. */
  cancelReplayed(rec: OperationRecord): void {
    const reason = (rec.result as { reason?: unknown } | null)?.reason;
    this.applyCancel(typeof reason === 'string' ? reason : 'Cancelled', rec.seq);
  }

  /**
   * The cancel takes effect: cancellable waits end (their timers deleted with the record), bodies
   * outside ctx.nonCancellable see their signal abort, and every cancellable call pending rejects
   * with WorkflowCancelledError. Live (`messageId`), it is recorded at `seq`, consuming the request.
   */
  private applyCancel(reason: string, seq: number, messageId?: string): void {
    const err = new WorkflowCancelledError(this.workflowId, reason);
    this.cancelState.applied(err);
    const deleteTimers: Array<{ kind: 'sleep' | 'message-timeout'; seq: number }> = [];
    for (const [s, w] of [...this._waits]) {
      if (w.shielded) continue;
      this._waits.delete(s);
      if (w.timer) {
        this.host.timers.cleared(this.workflowId, s);
        deleteTimers.push({ kind: w.timer, seq: s });
      }
    }
    if (messageId !== undefined) {
      this._mayHaveStoredTimers = true; // the grace period's timer
      void this.record(
        { seq, kind: 'cancelRequested', name: 'cancel', status: 'completed', result: { reason } },
        { consume: [{ id: messageId, seq }], deleteTimers },
      );
    }
    this.cancelState.abortScope(err);
  }

  // --- step bodies ------------------------------------------------------------------------------

  stepBegins(): void {
    this._inflightSteps++;
  }

  /** A step waits out its retry backoff on the workflow clock (+1) or stopped waiting (-1). */
  stepBackoff(delta: 1 | -1): void {
    this._backingOff += delta;
  }

  /** Its only steps wait out their retry backoff, and it commits nothing (the testing kit's autoSkip). */
  get inBackoffOnly(): boolean {
    return this._backingOff > 0 && this._inflightSteps === this._backingOff && !this.hasPendingCommits;
  }

  /** Step bodies running now (not waiting out a backoff): the testing kit waits for them. */
  get busySteps(): number {
    return this._inflightSteps - this._backingOff;
  }

  stepEnds(): void {
    this._inflightSteps--;
    // Only a run with a wait can park; a wait added later schedules its own check.
    if (this._waits.size > 0) this.scheduleParkCheck();
  }

  // --- timers -----------------------------------------------------------------------------------

  /** A timer of this run fired before its wait was reached again: the wait resolves as fired. */
  markFired(seq: number): void {
    this._firedTimers.add(seq);
  }

  /** The timer of the wait at `seq` is stored, due at `at`. */
  timerStored(seq: number, at: Date): void {
    this._timers.set(seq, at);
  }

  get isReplaying(): boolean {
    return this._replay !== undefined && !this._replay.done;
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
    this.codeFrom = this._nextSeq;
  }

  /**
   * Deliveries happen before run() (a start's own messages) or once the code has made its first
   * ctx call, never in between: a replay applies the deliveries recorded before the code's first
   * call before run(), so one made after run() began but before that call would be replayed in
   * the wrong place (before run() set its state up).
   */
  get mayDeliver(): boolean {
    return this.codeFrom === undefined || this._nextSeq > this.codeFrom;
  }

  /** run() was called: an update is delivered only from then on (at its first wait), never before it. */
  get codeBegun(): boolean {
    return this.codeFrom !== undefined;
  }

  isActive(): boolean {
    return this._state === 'active';
  }

  isStopped(): boolean {
    return this._state === 'stopped';
  }

  applyDelivery(rec: OperationRecord): void {
    this.host.applyDelivery(this, rec);
  }

  /**
   * The next sequence number. For a call other than a patch check (`skipMarkers`), a marker that
   * ctx.deprecatePatch recorded is passed over when the code no longer makes that call (the
   * patch's last phase removed it, docs/versioning.md); any other recorded operation is the
   * code's to match. A patch check and a delivery take the seq where the run is.
   */
  takeSeq(skipMarkers = true): number {
    if (skipMarkers) this.skipDeprecatedMarkers();
    return this._nextSeq++;
  }

  skipDeprecatedMarkers(): void {
    while (this._nextSeq <= this.maxRecordedSeq && isDeprecatedMarker(this._history.get(this._nextSeq))) this._nextSeq++;
  }

  nonDeterminism(err: Error): void {
    this.host.onNonDeterminism(this, err);
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
    for (const op of this._history.values()) {
      const id = op.kind === 'startChild' ? (op.result as { workflowId?: string } | null)?.workflowId : undefined;
      if (id) ids.add(id);
    }
    return [...ids];
  }

  /**
   * Records a live resolution: the op gets the next event number, is queued for commit with
   * `extra` (consumption, timer deletion) and lands in the in-memory history at once.
   */
  record(op: OperationRecord, extra: Change = {}, event = this.nextEvent++): Promise<void> {
    const withEvent = { ...op, event };
    this._history.set(op.seq, withEvent);
    return this.commit({ ...extra, operations: extra.operations?.length ? [withEvent, ...extra.operations] : [withEvent] });
  }

  /**
   * A transactional step's record: committed with everything queued through `send`, on the step's
   * own transaction (CommitQueue.commitThrough), and in the history only once that committed. A
   * throw leaves nothing recorded (the transaction is tried again, or the run re-read).
   */
  async recordThrough(op: OperationRecord, send: (command: AdvanceCommand) => Promise<AdvanceOutcome>): Promise<AdvanceOutcome> {
    const withEvent = { ...op, event: this.nextEvent++ };
    this.committingThrough++;
    try {
      const outcome = await this.commits.commitThrough({ operations: [withEvent] }, send);
      if (outcome.ok) this._history.set(op.seq, withEvent);
      return outcome;
    } finally {
      this.throughDone();
    }
  }

  /** A transactional record left the commit queue's turn: a cancel that came meanwhile is applied once the result has reached the code. */
  private throughDone(): void {
    if (--this.committingThrough === 0 && this.inbox.hasCancel) this.host.pump(this);
  }

  /**
   * A transactional step's record that the code goes on past before it commits (decision 0043):
   * once the run's turn is held (nothing else of the run can commit ahead of it), the record is in
   * the history and this resolves; `committed` then sends it through `send` after the code's next
   * wait (a macrotask), with everything the code queued meanwhile (the next step's durable(), the
   * completion), in the step's own transaction. A throw stops the run (CommitQueue.commitHeld).
   */
  async recordRiding(
    op: OperationRecord,
    send: (command: AdvanceCommand) => Promise<AdvanceOutcome>,
  ): Promise<{ committed: Promise<AdvanceOutcome> }> {
    const withEvent = { ...op, event: this.nextEvent++ };
    this.committingThrough++;
    try {
      await this.commits.takeTurn();
    } finally {
      this.throughDone();
    }
    this._history.set(op.seq, withEvent);
    const committed = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.commits.commitHeld({ operations: [withEvent] }, send, true),
    );
    return { committed };
  }

  /**
   * Resolves a pending live wait with `result`, recording it (and `extra`) first. With its queue
   * slot released, the wait is taken (nothing else resolves it) but its resolution waits until
   * the run holds a slot again: the code goes on only then.
   */
  resolveWait(seq: number, result: unknown, extra: Change = {}): boolean {
    const w = this._waits.get(seq);
    if (!w || this._state !== 'active') return false;
    this._waits.delete(seq);
    this._parked = false;
    if (this.queueSlot.state !== 'held' && !this.readOnly) {
      this.queueSlot.holdBack(
        () => this.resolveTaken(seq, w, result, extra),
        () => this.host.wantSlot(this),
      );
      return true;
    }
    this.resolveTaken(seq, w, result, extra);
    return true;
  }

  private resolveTaken(seq: number, w: Wait, result: unknown, extra: Change): void {
    if (this._state !== 'active') return;
    if (w.timer) this.host.timers.cleared(this.workflowId, seq);
    const deleteTimers = w.timer ? [{ kind: w.timer, seq }] : [];
    void this.record(
      { seq, kind: w.kind, name: w.name, status: 'completed', result },
      { ...extra, deleteTimers: [...deleteTimers, ...(extra.deleteTimers ?? [])] },
    );
    const replayed = this.afterReplay();
    if (replayed) void replayed.then(() => w.resolve(result));
    else w.resolve(result);
  }

  /** Its queue slot under releaseWhileWaiting (run-slot.ts): held, released while parked, or wanted. */
  get slot(): SlotState {
    return this.queueSlot.state;
  }

  /** Parked in a releaseWhileWaiting queue: its slot is being given back (a wake from now on waits for one). */
  slotReleased(): void {
    this.queueSlot.released();
  }

  /** The release did not land (the row moved on): it still holds its slot. */
  slotKept(): void {
    this.queueSlot.kept();
  }

  /** It holds a slot again: the wakes held back resolve, in order, and its inbox is delivered. */
  slotTaken(): void {
    if (this.queueSlot.taken()) this.host.pump(this);
  }

  /** An event number taken now for a record made later (an update's, whose handler records first). */
  takeEvent(): number {
    return this.nextEvent++;
  }

  recordLazy(op: OperationRecord): void {
    const withEvent = { ...op, event: this.nextEvent++ };
    this.commits.addLazy(withEvent);
    this._history.set(op.seq, withEvent);
  }

  /** Queues a change; resolves once it is durable. Never settles if the execution goes stale. */
  commit(change: Change, terminal = false): Promise<void> {
    if (this.readOnly) return NEVER;
    if (this._state !== 'active' && !(terminal && this._state === 'finished')) return NEVER;
    if (change.timers?.length) this._mayHaveStoredTimers = true;
    const committed = this.commits.enqueue(change);
    if (terminal) this.terminalCommit = committed;
    return committed;
  }

  /** Resolves once everything queued so far is durable (never, if the execution goes stale). */
  durable(): Promise<void> {
    if (this.commits.idle) return Promise.resolve();
    // Its end is decided: nothing more is queued, and all that was rides in or ahead of the terminal commit.
    if (this._state === 'finished' && this.terminalCommit) return this.terminalCommit;
    return this.commit({});
  }

  /** Something is still to be written, or being written (graceful shutdown waits for it). */
  get hasPendingCommits(): boolean {
    return this.commits.pending;
  }

  /**
   * Drops the run: every pending and future ctx call never settles. `abort` also aborts
   * ctx.signal (cancel, timeout, lost ownership); eviction of a parked run does not.
   */
  stop(abort = true): void {
    if (this._state === 'active') this._state = 'stopped';
    this.commits.drop();
    this._waits.clear();
    if (abort && !this.abort.signal.aborted) this.abort.abort();
    if (abort) this.cancelState.stopped(this.abort.signal.reason);
    this._trace?.end('stopped');
  }

  wait(seq: number, wait: Omit<Wait, 'resolve'>): Promise<unknown> {
    if (this._state !== 'active') return NEVER;
    return new Promise<unknown>((resolve) => {
      this._waits.set(seq, { ...wait, resolve });
      this.scheduleParkCheck();
      this.host.pump(this);
    });
  }

  /** A due timer for a live wait: its timeout outcome (null, false) or a finished sleep. */
  fireTimer(seq: number): boolean {
    const w = this._waits.get(seq);
    if (!w) return false;
    const spec: OperationKindSpec = OPERATION_KINDS[w.kind];
    return this.resolveWait(seq, spec.onTimer ?? null);
  }

  /** Parked = nothing running, nothing committing, only waits: the engine may evict it. */
  scheduleParkCheck(): void {
    if (this.parkCheckScheduled) return;
    this.parkCheckScheduled = true;
    setImmediate(() => {
      this.parkCheckScheduled = false;
      const parked = this._state === 'active' && this._inflightSteps === 0 && this.commits.empty && this._waits.size > 0;
      if (parked && !this._parked) {
        this._parked = true;
        this._trace?.park();
        this.host.onParked(this);
      } else if (!parked) this._parked = false;
      if (parked) this.host.pump(this);
    });
  }
}
