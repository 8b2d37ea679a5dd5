// The workflow-facing types, under everything else: this file imports nothing of the package but
// durations, so any layer can use them (docs/architecture.md).
import type { Duration } from './duration.js';
import type { OperationKind } from './operation-kinds.js';
import type { EntityManager } from 'typeorm';

/** A workflow's statuses, in the order of its life; code names them here rather than by their text. */
export const WorkflowStatus = {
  Pending: 'pending',
  Enqueued: 'enqueued',
  Running: 'running',
  Suspended: 'suspended',
  Completed: 'completed',
  Failed: 'failed',
  Cancelled: 'cancelled',
  TimedOut: 'timed_out',
} as const;
export type WorkflowStatus = (typeof WorkflowStatus)[keyof typeof WorkflowStatus];

/** Every status, in the order of a workflow's life. */
export const WORKFLOW_STATUSES: readonly WorkflowStatus[] = Object.values(WorkflowStatus);

/** The statuses of a workflow that has not ended. */
export const LIVE_STATUSES: readonly WorkflowStatus[] = [
  WorkflowStatus.Pending,
  WorkflowStatus.Enqueued,
  WorkflowStatus.Running,
  WorkflowStatus.Suspended,
];

export const TERMINAL_STATUSES: readonly WorkflowStatus[] = [
  WorkflowStatus.Completed,
  WorkflowStatus.Failed,
  WorkflowStatus.Cancelled,
  WorkflowStatus.TimedOut,
];

/** One recorded operation of a workflow's history (a step, timer, message, child, ...). */
export interface OperationRecord {
  seq: number;
  /** What the call was (common/operation-kinds.ts). */
  kind: OperationKind;
  name: string;
  status: 'completed' | 'failed';
  result?: unknown;
  error?: unknown;
  attempts?: number;
  startedAt?: string | null;
  /** Order of resolution in the live run (absent: resolved when called, or legacy rows). */
  event?: number | null;
}

/** An attribute's value (ctx.setAttributes): filterable, so a scalar; null removes the key. */
export type AttributeValue = string | number | boolean | null;

/** What setAttributes and the start option take: a Date is stored as its ISO-8601 UTC text. */
export type AttributeInput = AttributeValue | Date;

/** A workflow's attributes by key, as `describe` returns them. */
export type WorkflowAttributes = Readonly<Record<string, Exclude<AttributeValue, null>>>;

/** A child started with ctx.startChild; `result()` is a durable wait. */
export interface ChildHandle<O = unknown> {
  workflowId: string;
  result(): Promise<O>;
}

/** What workflow code gets as `ctx`. Every call takes the next sequence number; see docs/concepts.md. */
export interface WorkflowContext {
  readonly workflowId: string;
  /** Run number of this workflow id: 1, then +1 per continueAsNew or idPolicy 'start-new-if-terminal' restart. */
  readonly runNumber: number;
  /** The same as `runNumber` (its first name). */
  readonly attempt: number;
  /** Aborted when the run stops here: its end (cancelled, timed out), suspension or loss of ownership. */
  readonly signal: AbortSignal;
  readonly isReplaying: boolean;
  /** Quiet while replaying, so a replay does not repeat old log lines. */
  readonly logger: WeftLogger;
  /** A durable step: runs `fn` (retried per `opts.retry`) once, then replays its recorded result. */
  step<T>(name: string, fn: (args: StepArgs) => T | Promise<T>, opts?: StepOptions): Promise<T>;
  /**
   * A transactional step: `fn` runs in a PostgreSQL transaction on Weft's database and its writes
   * through `manager` commit with the step's record, exactly once (docs/transactions.md).
   */
  transaction<T>(name: string, fn: (manager: EntityManager, args: StepArgs) => T | Promise<T>, opts?: TransactionOptions): Promise<T>;
  /** Durable timer; survives restarts. */
  sleep(duration: Duration): Promise<void>;
  /** Consumes the oldest unconsumed signal of that name; null on timeout. */
  waitForSignal<T = unknown>(name: string, opts?: { timeout?: Duration }): Promise<T | null>;
  /** Waits until `pred()` holds, re-evaluated after each handler delivery; false on timeout. */
  condition(pred: () => boolean, opts?: { timeout?: Duration }): Promise<boolean>;
  /** Starts a child workflow; its completion reaches this workflow as a durable message. */
  startChild<O = unknown>(type: string, input: unknown, opts?: { workflowId?: string }): Promise<ChildHandle<O>>;
  /** startChild, then wait for its result. */
  executeChild<O = unknown>(type: string, input: unknown, opts?: { workflowId?: string }): Promise<O>;
  /**
   * Merges attributes into this run's (a null value removes its key): recorded with the run's
   * next commit and stored on the workflow, where describe shows them; a replay does not write
   * them again. At most 32 keys; a continued or restarted run starts with none (docs/api.md).
   */
  setAttributes(attrs: Record<string, AttributeInput>): void;
  /**
   * Publishes `value` under `key` (the latest value per key) for `engine.getEvent`: recorded with
   * the run's next commit and visible when it lands; a replay does not write it again. Events
   * belong to the workflow id: a continued or restarted run keeps them (docs/events-and-streams.md).
   */
  setEvent(key: string, value: unknown): Promise<void>;
  /**
   * Appends `value` to stream `key` for `engine.readStream`. From workflow code it is recorded with
   * the run's next commit (exactly once); from a step body it is appended at once, tagged with the
   * attempt (at least once: a retried body writes again). Refused after `closeStream(key)`.
   */
  writeStream(key: string, value: unknown): Promise<void>;
  /** Closes stream `key` (workflow code only): its readers end after its last entry. */
  closeStream(key: string): Promise<void>;
  /** Signals another workflow: recorded once, delivered exactly once across a restart or takeover of this one. */
  signalWorkflow(workflowId: string, name: string, payload?: unknown): Promise<void>;
  /**
   * Asks another workflow to cancel, as engine.cancel (nothing when it already ended): recorded
   * once, takes effect once.
   */
  cancelWorkflow(workflowId: string): Promise<void>;
  /**
   * Runs `fn` shielded from this workflow's cancel: its steps, sleeps, waits and children run to
   * their end (cleanup, compensations), within the engine's `cancelGracePeriod` counted from the
   * cancel (docs/cancellation.md). Outside it, a cancel throws WorkflowCancelledError into the
   * call the code awaits, and into every such call made after it.
   */
  nonCancellable<T>(fn: () => T | Promise<T>): Promise<T>;
  /** Starts a workflow that outlives this one (not a child): recorded once; `workflowId` defaults to one derived from this call. */
  startWorkflow(type: string, input: unknown, opts?: { workflowId?: string }): Promise<{ workflowId: string }>;
  /** The recorded clock: the same on every replay. */
  now(): Date;
  /** A recorded random number in [0, 1). */
  random(): number;
  /** A recorded random UUID. */
  uuid(): string;
  /**
   * Ends this run and starts the next run of the same workflow id with `input` and a fresh, empty
   * history, in one commit, under the same claim (`runNumber + 1`). Unconsumed signals and
   * updates carry over; children still running get the parent-close policy. It never returns:
   * `return ctx.continueAsNew(next)` (docs/continue-as-new.md).
   */
  continueAsNew(input: unknown): Promise<never>;
  /**
   * Versioning: true on the new code path. A run that reaches this call live records a marker
   * and takes the new path; a replay takes it only if its history recorded the marker here, so
   * runs started by older code keep the old path (docs/versioning.md).
   */
  patched(patchId: string): boolean;
  /** A patch's second phase, once no run from before the patch remains: always the new path. */
  deprecatePatch(patchId: string): void;
}

/** A workflow class: a fresh instance runs (or replays) every execution. */
export interface WorkflowInstance<I = unknown, O = unknown> {
  run(ctx: WorkflowContext, input: I): Promise<O>;
}

export type WorkflowFactory = () => WorkflowInstance;

/** Refuses an update by throwing; synchronous, and makes no ctx call (DESIGN 9.8). */
export type UpdateValidatorFn = (this: never, args: never) => void;

export interface WorkflowDefinition {
  name: string;
  factory: WorkflowFactory;
  /** Signal handlers by signal name: method names on the instance. */
  signalHandlers?: Record<string, string>;
  /** Update handlers by update name: method names on the instance; a handler may be async (docs/messages.md). */
  updateHandlers?: Record<string, string>;
  /**
   * Update validators by update name: a method name on the instance, or a function called with the
   * instance as `this`. It throws to reject the update before anything is recorded.
   */
  updateValidators?: Record<string, string | UpdateValidatorFn>;
  queryHandlers?: Record<string, string>;
  /** `@Schedule`s of the type: created or updated at bootstrap. */
  schedules?: ScheduleDecoratorOptions[];
  /** The code's version (`@Workflow(name, { version })`): recorded at start, shown by describe and list. */
  version?: string;
  /** The queue every start of this type goes to unless the start names one (`@Workflow(name, { queue })`). */
  queue?: string;
  /** A partitioned queue's key for a start that names none, taken from the input (`@Workflow(name, { partitionKey })`). */
  partitionKey?: (input: never) => string;
}

export type IdPolicy = 'return-existing' | 'reject-duplicate' | 'start-new-if-terminal';

export interface StartOptions {
  workflowId?: string;
  idPolicy?: IdPolicy;
  /** Delayed start at this instant. */
  startAt?: Date;
  /** Delayed start after this long. */
  startAfter?: Duration;
  /** The whole execution must finish within this long, or it ends `timed_out`. */
  executionTimeout?: Duration;
  parentId?: string;
  /** Admit the run through this queue (declared in the `queues` option): `enqueued` until admitted (docs/queues.md). */
  queue?: string;
  /** Within a queue, higher is admitted first (-1000 to 1000, default 0); FIFO within one priority. */
  priority?: number;
  /**
   * Start inside this transaction (the caller's, on Weft's database): the workflow exists iff it
   * commits, and runs once it has. Inside an ambient @Transactional() scope, that one is joined
   * without it (docs/transactions.md).
   */
  manager?: EntityManager;
  /** In a partitioned queue, the key (a tenant, a customer) whose own limits the run counts against (docs/queues.md). */
  partitionKey?: string;
  /**
   * At most one live workflow of this type per key: a start that finds one returns its handle
   * ('return-existing', the default), fails with SingletonConflictError ('reject'), or is stored
   * and starts once the key is free, after the starts queued before it ('queue') (docs/queues.md).
   */
  singleton?: string | { key: string; onConflict?: 'return-existing' | 'reject' | 'queue' };
  /**
   * Start once `delay` after the last start of this type with this key (at most `maxDelay` after
   * the first), with the last call's input; every call returns the same handle (docs/queues.md).
   */
  debounce?: { key: string; delay: Duration; maxDelay?: Duration };
  /** The run's first attributes, bounded as ctx.setAttributes (docs/api.md, "Attributes"). */
  attributes?: Record<string, AttributeInput>;
}

/** signal()'s options. */
export interface SignalOptions {
  /** Send inside this transaction: stored iff it commits; the owner is woken on commit. */
  manager?: EntityManager;
}

/** cancel()'s options. */
export interface CancelOptions {
  reason?: string;
  /** Ask inside this transaction: the request is stored (and the workflow woken) iff it commits. */
  manager?: EntityManager;
}

/** One queue of the `queues` option: limits that hold across every engine on the database (docs/queues.md). */
export interface QueueOptions {
  /** At most this many of the queue's workflows `running` at once, over all engines. */
  concurrency?: number;
  /** At most this many of the queue's workflows running on one engine. */
  perEngineConcurrency?: number;
  /** At most `limit` admissions in any sliding window of `period`, over all engines. */
  rateLimit?: { limit: number; period: Duration };
  /**
   * Limits per partition key, under the queue's own: every start names a `partitionKey`, and
   * keys with work are admitted in turn, so one key cannot hold back the others.
   */
  partition?: { concurrency?: number; rateLimit?: { limit: number; period: Duration } };
  /**
   * A run parked on a timer or a message (sleep, condition, waitForSignal, a child's result) gives
   * its slot back, and takes one again before it goes on, waiting (ahead of the queue's enqueued
   * work) when none is free. Default false: a run holds its slot from admission to its end.
   */
  releaseWhileWaiting?: boolean;
}

export interface RetryPolicy {
  maxAttempts?: number;
  initialInterval?: Duration;
  backoffCoefficient?: number;
  maxInterval?: Duration;
  /** Error names (err.name) that fail the step at once. */
  nonRetryable?: string[];
  /**
   * How long the step may take over all its attempts, from its first attempt's start (Temporal's
   * scheduleToClose): the attempt running at the deadline is aborted, no retry begins after it,
   * and the step fails with StepMaxElapsedError. Measured from the recorded first start, so it
   * holds across a takeover.
   */
  maxElapsed?: Duration;
}

export interface StepOptions {
  retry?: RetryPolicy;
  /** Per-attempt timeout; the attempt's signal is aborted when it passes. */
  timeout?: Duration;
  /**
   * An attempt that goes this long without `currentStep().heartbeat()` (from its start or its
   * last heartbeat) is aborted and fails with StepHeartbeatTimeoutError, retried per the policy
   * (docs/long-steps.md).
   */
  heartbeatTimeout?: Duration;
  /**
   * 'external': the body gets `completionToken` and its return value is not the result: the step
   * waits, within its `timeout`, for engine.completeStep(token, result) or failStep(token, error),
   * called once from anywhere (docs/long-steps.md).
   */
  complete?: 'external';
}

export interface StepArgs {
  attempt: number;
  /** `${workflowId}:${seq}`: the same on every retry and after a takeover. */
  idempotencyKey: string;
  signal: AbortSignal;
  /** Inside a transactional step only: the transaction's manager (its writes commit with the step's record). */
  manager?: EntityManager;
  /**
   * Saves the step's progress (JSON details, bounded like a payload): written in batches, off the
   * hot path; a retry reads it as `lastHeartbeat`, here or on the engine that takes the workflow
   * over. Also keeps a step with `heartbeatTimeout` alive (docs/long-steps.md).
   */
  readonly heartbeat: (details?: unknown) => void;
  /** The last details a heartbeat saved (this attempt's, an earlier one's, or an earlier owner's); undefined when none. */
  readonly lastHeartbeat: unknown;
  /** With `{ complete: 'external' }`: the token that engine.completeStep / failStep take. */
  readonly completionToken?: string;
}

/**
 * A library's ambient transaction (typeorm-transactional, @nestjs-cls/transactional): inside a
 * transactional body, code written for it finds the body's transaction (docs/transactions.md).
 */
export interface AmbientTransaction {
  /** The library's name, for logs. */
  readonly name: string;
  /** Runs `fn` with `manager` as the library's active transaction for `manager`'s DataSource. */
  join<T>(manager: EntityManager, fn: () => T): T;
  /** The library's active transaction here, on this DataSource or else the app's default one (a transactional start joins it), if any. */
  current(dataSource: EntityManager['connection']): EntityManager | undefined;
}

/** PostgreSQL's isolation levels a transactional step may run at (default: the database's, read committed). */
export type TransactionIsolation = 'read committed' | 'repeatable read' | 'serializable';

/** ctx.transaction's options: a step's, and the transaction's isolation level. */
export interface TransactionOptions extends StepOptions {
  isolation?: TransactionIsolation;
}

/** An error as a history records it (docs/concepts.md, "Errors"). */
export interface WorkflowFailure {
  name: string;
  message: string;
  stack?: string;
  /** The error's own `code`, when it had a string or number one. */
  code?: string | number;
  /** The error's own `details`, when JSON holds them within 32 KiB. */
  details?: unknown;
  /** The error's `cause`, recorded the same way (up to four levels). */
  cause?: WorkflowFailure;
  [key: string]: unknown;
}

export interface WorkflowDescription {
  workflowId: string;
  type: string;
  status: WorkflowStatus;
  input: unknown;
  output: unknown;
  error: WorkflowFailure | null;
  parentId: string | null;
  runNumber: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  deadline: Date | null;
  startAt: Date | null;
  /** The row's optimistic-lock version (not the code's: that is `workflowVersion`). */
  version: number;
  /** `@Workflow(name, { version })` of the code that started this run; null without one. */
  workflowVersion: string | null;
  /** The queue it was started into; null without one. */
  queue: string | null;
  priority: number;
  /** When its queue admitted it (status `enqueued` before); null outside a queue or while enqueued. */
  admittedAt: Date | null;
  /** What the current run set with ctx.setAttributes ({} when nothing). */
  attributes: WorkflowAttributes;
  /** engine.fork made it: from this workflow's run, its operations before `fromSeq` kept. */
  forkedFrom: { workflowId: string; runNumber: number; fromSeq: number } | null;
  /** engine.retry made this run: the failed run it continues, from `fromSeq` on. */
  retriedFrom: { runNumber: number; fromSeq: number } | null;
  history: OperationRecord[];
  /** What the workflow published with ctx.setEvent: each key's latest value, by key. */
  events: WorkflowEventRecord[];
}

/** One entry of a stream (engine.readStream). */
export interface StreamEntry {
  /** Dense from 0 per (workflow, key). */
  offset: number;
  value: unknown;
  /** When it was stored (database time). */
  at: Date;
  /** The step attempt that wrote it (a step body's write, at least once); null from workflow code. */
  attempt: number | null;
}

/** One key's event as describe shows it. */
export interface WorkflowEventRecord {
  key: string;
  value: unknown;
  updatedAt: Date;
}

/**
 * One attribute's condition in `list({ attributes })`: a value (equal to it), or an object of
 * `eq`, `in` (any of), and ranges `gt`, `gte`, `lt`, `lte` on a number or a timestamp (a Date, or
 * ISO-8601 text); all given must hold (docs/api.md, "Attributes").
 */
export type AttributeCondition =
  | AttributeInput
  | {
      eq?: AttributeInput;
      in?: AttributeInput[];
      gt?: number | Date | string;
      gte?: number | Date | string;
      lt?: number | Date | string;
      lte?: number | Date | string;
    };

/** Conditions by attribute key; a workflow is listed when it meets every one. */
export type AttributeFilter = Record<string, AttributeCondition>;

/** What `list` can add to each item: the run's input and its output (null until it completes). */
export type ListInclude = 'input' | 'output';

export interface ListFilter {
  status?: WorkflowStatus | WorkflowStatus[];
  type?: string;
  /** Only workflow ids that start with this text (1 to 255 characters). */
  idPrefix?: string;
  /** Only workflows whose attributes meet every condition (docs/api.md, "Attributes"). */
  attributes?: AttributeFilter;
  /** By creation time: 'oldest' first (default) or 'newest' first. */
  order?: 'newest' | 'oldest';
  /** Adds each item's input and/or output. */
  include?: ListInclude[];
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor` (of a list in the same order). */
  cursor?: string;
}

export interface WorkflowSummary {
  workflowId: string;
  type: string;
  status: WorkflowStatus;
  parentId: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  workflowVersion: string | null;
  queue: string | null;
  priority: number;
  runNumber: number;
  attributes: WorkflowAttributes;
  /** engine.fork made it (see WorkflowDescription). */
  forkedFrom: { workflowId: string; runNumber: number; fromSeq: number } | null;
  /** engine.retry made its current run (see WorkflowDescription). */
  retriedFrom: { runNumber: number; fromSeq: number } | null;
  /** With `include: ['input']`. */
  input?: unknown;
  /** With `include: ['output']`: the output of a completed run, else null. */
  output?: unknown;
}

export interface ListPage {
  items: WorkflowSummary[];
  nextCursor: string | null;
}

export interface WeftLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
}

export interface EngineHealthSnapshot {
  engineId: string;
  ownership: 'none' | 'lease' | 'workflow-lease';
  bootstrapped: boolean;
  disposed: boolean;
  /** Deposed from the global lease (ownership 'lease'): it runs nothing any more. */
  halted: boolean;
  backgroundTasks: 'auto' | 'manual';
  /** Start of the last background pass (renewal pass under ownership, timer tick under 'none'). */
  lastBackgroundPassAt: Date | null;
  backgroundIntervalMs: number;
  liveWorkflows: number;
  claimsHeld: number;
  renewalFailures: number;
  /** Per declared queue, as of this engine's last admission pass: workflows enqueued and running (all engines). */
  queues: Record<string, { enqueued: number; running: number }>;
}

/** What a schedule does when a fire comes while its previous run still runs. */
export type ScheduleOverlapPolicy = 'skip' | 'buffer-one' | 'allow-all' | 'cancel-other';

/** When a schedule fires: exactly one of `cron` (5 or 6 fields, in `timezone`) or `every`. */
export interface ScheduleSpec {
  cron?: string;
  /** A fixed interval, aligned to the Unix epoch so every engine computes the same fire times. */
  every?: Duration;
  /** IANA time zone for `cron` (default UTC); daylight-saving changes are handled by the cron library. */
  timezone?: string;
  input?: unknown;
  /** Default 'skip'. */
  overlap?: ScheduleOverlapPolicy;
  /** Missed fires (all engines down) are started if at most this late; older ones are skipped. Default: one interval. */
  catchupWindow?: Duration;
}

/** `@Schedule(...)` on a `@Workflow` class: created or updated at bootstrap. */
export interface ScheduleDecoratorOptions extends ScheduleSpec {
  id: string;
}

export interface ScheduleCreateOptions extends ScheduleDecoratorOptions {
  workflowType: string;
  paused?: boolean;
}

/** 'failed': the fire could not start (logged); the schedule went on from its next fire time. */
export type ScheduleFireOutcome = 'started' | 'caught-up' | 'triggered' | 'skipped' | 'buffered' | 'missed' | 'failed';

export interface ScheduleRun {
  fireAt: Date;
  workflowId: string;
  outcome: ScheduleFireOutcome;
  /** The workflow's status now; null when it was not started (skipped, missed) or is gone. */
  status: WorkflowStatus | null;
}

export interface ScheduleDescription {
  id: string;
  workflowType: string;
  cron: string | null;
  everyMs: number | null;
  timezone: string | null;
  input: unknown;
  overlap: ScheduleOverlapPolicy;
  catchupWindowMs: number;
  paused: boolean;
  /** 'decorator' (kept in step with `@Schedule` at each bootstrap) or 'api'. */
  source: 'decorator' | 'api';
  /** The next fire times (up to five); empty while paused. */
  nextFireTimes: Date[];
  /** A fire held back by `buffer-one` until the running one ends. */
  bufferedFireAt: Date | null;
  /** The last fires, newest first (up to ten). */
  recentRuns: ScheduleRun[];
  createdAt: Date;
  updatedAt: Date;
}

/** How long ended workflows are kept, by final status; absent: kept forever. */
export interface RetentionOptions {
  completed?: Duration;
  failed?: Duration;
  cancelled?: Duration;
  timedOut?: Duration;
}
