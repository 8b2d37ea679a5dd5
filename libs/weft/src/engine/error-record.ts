// How an error is written into a history (a step's failure, a workflow's, an update's): what
// `recordedError` in common/errors.ts rebuilds, the same on the live run, on another engine and
// after replay (docs/concepts.md "Errors").
import { APPLICATION_ERROR_MARK, ApplicationError, NonRetryableError, WorkflowCancelledError } from '../common/errors.js';
import type { WorkflowFailure } from '../common/types.js';
import { assertJsonSerializable, storableText, unstorableText } from './validation.js';

/** A cause chain deeper than this is cut: the rest is in the stack of the last one kept. */
const MAX_CAUSE_DEPTH = 4;
/** `details` larger than this as JSON are left out (the error's name, message and code stay). */
export const MAX_ERROR_DETAILS_BYTES = 32 * 1024;
/** Own fields (stepName, attempts, workflowId...) kept beside name and message. */
const MAX_FIELDS = 16;
const MAX_FIELD_CHARS = 1024;
const RESERVED = new Set(['name', 'message', 'stack', 'code', 'details', 'cause', APPLICATION_ERROR_MARK]);

/**
 * The error as stored: name, message, stack, `code`, `details` (when JSON can hold them), its
 * short own fields (a StepFailedError's stepName and attempts), and its cause, recursively.
 */
export function describeError(err: unknown, depth = 0): WorkflowFailure {
  if (!(err instanceof Error)) {
    return { name: 'Error', message: storableText(typeof err === 'string' ? err : (safeStringify(err) ?? String(err))) };
  }
  // An error's text cannot be refused: what PostgreSQL cannot store becomes U+FFFD (decision 0014).
  const out: WorkflowFailure = { name: storable(err.name), message: storable(err.message), stack: storable(err.stack) };
  const rec = err as unknown as Record<string, unknown>;
  if (typeof rec.code === 'string' || typeof rec.code === 'number') out.code = storable(rec.code);
  const details = storableDetails(rec.details);
  if (details !== undefined) out.details = details;
  Object.assign(out, shortFields(err));
  // Marked so every engine rebuilds it as one (its subclass's own name is kept beside the mark).
  if (err instanceof ApplicationError)
    out[APPLICATION_ERROR_MARK] = err instanceof NonRetryableError ? 'NonRetryableError' : 'ApplicationError';
  if (err.cause !== undefined && depth < MAX_CAUSE_DEPTH) out.cause = describeError(err.cause, depth + 1);
  return out;
}

/** The error's own short fields (stepName, attempts, workflowId...), at most MAX_FIELDS. */
function shortFields(err: Error): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let kept = 0;
  for (const [key, value] of Object.entries(err)) {
    if (RESERVED.has(key) || kept >= MAX_FIELDS || unstorableText(key)) continue;
    if (typeof value === 'number' || typeof value === 'boolean' || (typeof value === 'string' && value.length <= MAX_FIELD_CHARS)) {
      out[key] = storable(value);
      kept++;
    }
  }
  return out;
}

/** `details` as JSON gives them back, or undefined when JSON cannot hold them or they are too large. */
function storableDetails(details: unknown): unknown {
  if (details === undefined) return undefined;
  try {
    assertJsonSerializable(details, 'error details');
    const text = JSON.stringify(details);
    if (text === undefined || Buffer.byteLength(text, 'utf8') > MAX_ERROR_DETAILS_BYTES) return undefined;
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** A string as storableText makes it; anything else as it is. */
function storable<T>(v: T): T {
  return (typeof v === 'string' ? storableText(v) : v) as T;
}

function safeStringify(v: unknown): string | undefined {
  try {
    return JSON.stringify(v);
  } catch {
    return undefined;
  }
}

/**
 * How a cancelled workflow's end is recorded, however it came (its code let the error through, the
 * grace period ran out, a parent ended, a cancel of a workflow that was not running): the reason
 * as its message, with WorkflowCancelledError's name and code (what result() rejects with as cause).
 */
export function cancelledRecord(reason: string): WorkflowFailure {
  return { name: WorkflowCancelledError.name, code: WorkflowCancelledError.code, message: storableText(reason) };
}
