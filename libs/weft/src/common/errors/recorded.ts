// A recorded error rebuilt from a history, as the typed error it was where Weft has one.
import type { RecordedError } from './base.js';
import { ApplicationError, NonRetryableError, type ApplicationErrorOptions } from './application.js';
import { StepFailedError } from './steps.js';
import { WorkflowCancelledError } from './cancellation.js';

/**
 * The key under which a history marks an ApplicationError (its base class, when a subclass's
 * name is recorded), so it is rebuilt as one. Not a field of the error itself.
 */
export const APPLICATION_ERROR_MARK = 'applicationError';

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
