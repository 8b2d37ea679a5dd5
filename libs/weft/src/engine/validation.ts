import { InvalidArgumentError, InvalidWorkflowIdError, PayloadNotSerializableError, PayloadTooLargeError } from '../common/errors.js';

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

export function validateWorkflowId(id: unknown): string {
  if (typeof id !== 'string') throw new InvalidWorkflowIdError(id, 'it must be a string');
  if (id.length === 0) throw new InvalidWorkflowIdError(id, 'it is empty');
  if (id.length > 255) throw new InvalidWorkflowIdError(id, `it is ${id.length} characters long`);
  if (CONTROL.test(id)) throw new InvalidWorkflowIdError(id, 'it contains control characters');
  return id;
}

/** Names (step, signal, update, query, workflow type) are stored in varchar(255) columns. */
export const MAX_NAME_LENGTH = 255;

/** Why `name` cannot be stored as a name, or null when it can. */
export function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return `must be a string (got ${typeof name})`;
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_NAME_LENGTH)
    return `must be at most ${MAX_NAME_LENGTH} characters (got ${name.length}); keep variable data out of names`;
  // PostgreSQL text cannot hold U+0000: the insert would fail after the checks.
  if (name.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  return null;
}

/**
 * The one check for names that go to the database, run before anything is written: inside a
 * workflow a bad name must fail the ctx call, not every commit of the run after it.
 */
export function validateName(what: string, name: unknown): string {
  const problem = nameProblem(name);
  if (problem) throw new InvalidArgumentError(what, problem);
  return name as string;
}

function kindOf(v: unknown): string | null {
  switch (typeof v) {
    case 'bigint':
      return 'a BigInt';
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
    case 'number':
      return Number.isFinite(v) ? null : `the number ${v}`;
    default:
      return null;
  }
}

/**
 * Deepest nesting of objects and arrays a payload may have. Real data rarely goes past a few
 * dozen levels; a bound keeps this check, JSON.stringify and PostgreSQL's json parser (all
 * recursive) far from their stack limits, so deep input is a typed error, not a RangeError.
 */
export const MAX_JSON_DEPTH = 100;

/** Refuses values JSON would silently change or drop (BigInt, functions, symbols, cycles, NaN) and nesting past MAX_JSON_DEPTH. */
export function assertJsonSerializable(value: unknown, what: string): void {
  const seen = new Set<object>();
  const visit = (v: unknown, path: string, depth: number): void => {
    const bad = kindOf(v);
    if (bad) throw new PayloadNotSerializableError(what, path, `found ${bad}`);
    if (v === null || typeof v !== 'object') return;
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return; // Date and friends
    if (seen.has(v)) throw new PayloadNotSerializableError(what, path, 'found a reference cycle');
    if (depth > MAX_JSON_DEPTH) {
      throw new PayloadNotSerializableError(what, path, `it is nested more than ${MAX_JSON_DEPTH} levels deep (the limit)`);
    }
    seen.add(v);
    if (Array.isArray(v)) v.forEach((x, i) => visit(x, `${path}[${i}]`, depth + 1));
    else if (v instanceof Map || v instanceof Set) throw new PayloadNotSerializableError(what, path, `found a ${v.constructor.name}`);
    else for (const [k, x] of Object.entries(v)) if (x !== undefined) visit(x, `${path}.${k}`, depth + 1);
    seen.delete(v);
  };
  visit(value, '$', 1);
}

/** Serializes once, checking size; returns the JSON round-trip of the value (what replay returns). */
export function toStoredJson(value: unknown, what: string, maxBytes: number): unknown {
  // A finite number (not -0), a boolean or null comes back from JSON as it went in, and so does a
  // string short enough that even fully escaped (6 bytes a code unit) it is within the bound.
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value) && !Object.is(value, -0)) return value;
  if (typeof value === 'string' && value.length * 6 + 2 <= maxBytes && !value.includes('\u0000')) return value;
  assertJsonSerializable(value, what);
  if (value === undefined) return null;
  let text: string;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    // A toJSON() the check above does not look into threw (or returned something unserializable).
    throw new PayloadNotSerializableError(what, '$', (err as Error).message, { cause: err });
  }
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw new PayloadTooLargeError(what, bytes, maxBytes);
  return JSON.parse(text);
}
