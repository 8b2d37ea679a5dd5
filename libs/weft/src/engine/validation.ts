import { InvalidArgumentError, InvalidWorkflowIdError, PayloadNotSerializableError, PayloadTooLargeError } from '../common/errors.js';

// U+0000, and a UTF-16 surrogate without its other half. PostgreSQL's text and json refuse both
// (the pg driver turns a lone surrogate in a text parameter into U+FFFD), so neither is ever stored.
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/**
 * The one rule for every string Weft stores (ids, names, reasons, every string and key of a
 * payload): what in `text` PostgreSQL cannot store, or null when it can.
 */
export function unstorableText(text: string): string | null {
  const found = UNSTORABLE.exec(text);
  if (!found) return null;
  const unit = found[0].charCodeAt(0);
  if (unit === 0) return 'the NUL character (U+0000)';
  return `a lone UTF-16 surrogate (U+${unit.toString(16).toUpperCase()})`;
}

/** `text` with what unstorableText finds replaced by U+FFFD: for text Weft records but cannot refuse (a thrown error's message). */
export function storableText(text: string): string {
  return unstorableText(text) === null ? text : text.replace(UNSTORABLE_ALL, '\ufffd');
}

// C0, DEL and C1 controls: an id is printed by the CLI and shown by the dashboard.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Why `id` cannot be a workflow id, or null. Schedule ids (and so their fire ids) follow the same
 * rule. "." and ".." are path segments a URL cannot carry (browsers and URL parsers resolve them,
 * even percent-encoded), so the HTTP API and the dashboard could never reach such a workflow.
 */
export function idProblem(id: unknown): string | null {
  if (typeof id !== 'string') return 'it must be a string';
  if (id.length === 0) return 'it is empty';
  if (id.length > 255) return `it is ${id.length} characters long`;
  if (CONTROL.test(id)) return 'it contains control characters';
  if (id === '.' || id === '..') return `it is "${id}", which a URL cannot carry as a path segment`;
  const unstorable = unstorableText(id);
  if (unstorable) return `it contains ${unstorable}`;
  return null;
}

export function validateWorkflowId(id: unknown): string {
  const problem = idProblem(id);
  if (problem) throw new InvalidWorkflowIdError(id, problem);
  return id as string;
}

/** Names (step, signal, update, query, workflow type) are stored in varchar(255) columns. */
export const MAX_NAME_LENGTH = 255;

/** Why `name` cannot be stored as a name, or null when it can. */
export function nameProblem(name: unknown): string | null {
  if (typeof name !== 'string') return `must be a string (got ${typeof name})`;
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_NAME_LENGTH)
    return `must be at most ${MAX_NAME_LENGTH} characters (got ${name.length}); keep variable data out of names`;
  // The insert would fail after the checks (or, for a lone surrogate, store another name).
  const unstorable = unstorableText(name);
  return unstorable ? `must not contain ${unstorable}` : null;
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

/** What in a value (not inside it) JSON would silently change or drop, or null. */
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

/** A key's step of a path; any other key is quoted as JSON, so an error message is itself storable. */
const keyPath = (path: string, key: string) => (/^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`);

/** The path of the keys and indexes walked down to, as `$.a[0]["b c"]`: built only for an error. */
function pathOf(keys: Array<string | number>): string {
  return keys.reduce<string>((path, k) => (typeof k === 'number' ? `${path}[${k}]` : keyPath(path, k)), '$');
}

/**
 * The one walk of a payload: refuses what JSON would silently change or drop (BigInt, functions,
 * symbols, cycles, NaN) and nesting past MAX_JSON_DEPTH; with `texts`, also any string or key,
 * at any depth, that unstorableText finds. An object with a toJSON() is not looked into. The keys
 * walked down to are kept on a stack and made into a path only for an error: a path string per
 * value cost more than the rest of the check, on every start and step result (docs/performance.md).
 */
function walk(value: unknown, what: string, texts: boolean): void {
  // The objects and arrays walked down through: a cycle is one of them met again. An array, not a
  // Set: nesting is shallow, and a Set gave every object an identity hash.
  const open: object[] = [];
  const keys: Array<string | number> = [];
  const refuse = (reason: string): never => {
    throw new PayloadNotSerializableError(what, pathOf(keys), reason);
  };
  const visit = (v: unknown, depth: number): void => {
    const bad = typeof v === 'string' ? (texts ? unstorableText(v) : null) : kindOf(v);
    if (bad) refuse(`found ${bad}`);
    if (v === null || typeof v !== 'object') return;
    if (typeof (v as { toJSON?: unknown }).toJSON === 'function') return; // Date and friends
    if (open.includes(v)) refuse('found a reference cycle');
    if (depth > MAX_JSON_DEPTH) refuse(`it is nested more than ${MAX_JSON_DEPTH} levels deep (the limit)`);
    if (v instanceof Map || v instanceof Set) refuse(`found a ${v.constructor.name}`);
    open.push(v);
    if (Array.isArray(v)) visitItems(v, depth + 1);
    else visitEntries(v as Record<string, unknown>, depth + 1);
    open.pop();
  };
  const visitItems = (a: unknown[], depth: number): void => {
    for (let i = 0; i < a.length; i++) {
      keys.push(i);
      visit(a[i], depth);
      keys.pop();
    }
  };
  const visitEntries = (o: Record<string, unknown>, depth: number): void => {
    for (const k of Object.keys(o)) {
      const x = o[k];
      if (x === undefined) continue; // JSON drops the key
      keys.push(k);
      const unstorable = texts ? unstorableText(k) : null;
      if (unstorable) refuse(`found ${unstorable} in the key`);
      visit(x, depth);
      keys.pop();
    }
  };
  visit(value, 1);
}

/** Refuses a value Weft could not store as it is (see walk): a message already stored, say. */
export function assertJsonSerializable(value: unknown, what: string): void {
  walk(value, what, true);
}

/**
 * The check of every payload a user offers, run before anything is written: serializes once,
 * checking size; returns the JSON round-trip of the value (what replay returns).
 */
export function toStoredJson(value: unknown, what: string, maxBytes: number): unknown {
  // A finite number (not -0), a boolean or null comes back from JSON as it went in, and so does a
  // storable string short enough that even fully escaped (6 bytes a code unit) it is within the bound.
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number' && Number.isFinite(value) && !Object.is(value, -0)) return value;
  if (typeof value === 'string' && value.length * 6 + 2 <= maxBytes && unstorableText(value) === null) return value;
  walk(value, what, false);
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
  const stored: unknown = JSON.parse(text);
  // JSON.stringify writes U+0000 and a lone surrogate only as a \u escape: text without one has
  // only storable strings, and the walk that names the place runs on what is stored (what a
  // toJSON() gave included) only when it may find one.
  if (text.includes('\\u')) walk(stored, what, true);
  return stored;
}

/** Cancel and suspend reasons are bounded like the HTTP API and the CLI bound them. */
export const MAX_REASON_LENGTH = 1000;

/** A cancel or suspend reason, stored as the message of the workflow's error. */
export function validateReason(what: string, reason: unknown): string {
  if (typeof reason !== 'string') throw new InvalidArgumentError(what, `must be a string (got ${typeof reason})`);
  if (reason.length > MAX_REASON_LENGTH) {
    throw new InvalidArgumentError(what, `must be at most ${MAX_REASON_LENGTH} characters (got ${reason.length})`);
  }
  const unstorable = unstorableText(reason);
  if (unstorable) throw new PayloadNotSerializableError(what, '$', `found ${unstorable}`);
  return reason;
}
