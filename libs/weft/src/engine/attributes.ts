// The bounds of a workflow's attributes (ctx.setAttributes, docs/api.md): checked before anything
// is recorded, so a refused call writes nothing and replays as the same refusal.
import { InvalidArgumentError } from '../common/errors.js';
import type { AttributeInput, AttributeValue, WorkflowAttributes } from '../common/types.js';
import { unstorableText } from './validation.js';

/** Keys a run may hold at once (nulls remove keys; the count is after the merge). */
export const MAX_ATTRIBUTE_KEYS = 32;
/** A key: letters, digits, `_`, `-` and `.`, starting with a letter, so `?attr.<key>=` and `--where key=` can name it. */
export const MAX_ATTRIBUTE_KEY_LENGTH = 64;
/** A string value, in characters: attributes are for filtering, not for payloads. */
export const MAX_ATTRIBUTE_STRING_LENGTH = 256;

const KEY = /^[A-Za-z][A-Za-z0-9_.-]*$/;

function valueProblem(v: unknown): string | null {
  if (v === null || typeof v === 'boolean') return null;
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? 'is an invalid Date' : null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : `is ${v}, which JSON cannot hold`;
  if (typeof v !== 'string') return `is ${Array.isArray(v) ? 'an array' : typeof v}; use a string, a number, a boolean or null`;
  if (v.length > MAX_ATTRIBUTE_STRING_LENGTH) return `is ${v.length} characters long (at most ${MAX_ATTRIBUTE_STRING_LENGTH})`;
  const unstorable = unstorableText(v);
  return unstorable ? `contains ${unstorable}` : null;
}

/**
 * `attrs` checked against the bounds, and the run's attributes after it (`current` merged with
 * it; a null value removes its key). Throws InvalidArgumentError for anything out of bounds.
 */
export function mergeAttributes(current: WorkflowAttributes, attrs: unknown, who = 'ctx.setAttributes'): WorkflowAttributes {
  if (attrs === null || typeof attrs !== 'object' || Array.isArray(attrs) || attrs instanceof Date)
    throw new InvalidArgumentError(who, 'takes an object of attribute values by key');
  const entries = Object.entries(attrs as Record<string, unknown>);
  if (entries.length === 0 && who === 'ctx.setAttributes') throw new InvalidArgumentError(who, 'needs at least one attribute');
  const next: Record<string, Exclude<AttributeValue, null>> = { ...current };
  for (const [key, value] of entries) {
    if (key.length > MAX_ATTRIBUTE_KEY_LENGTH || !KEY.test(key))
      throw new InvalidArgumentError(
        `attribute key ${JSON.stringify(key.slice(0, 80))}`,
        `must start with a letter, hold only letters, digits, "_", "-" and ".", and be at most ${MAX_ATTRIBUTE_KEY_LENGTH} characters`,
      );
    const problem = valueProblem(value);
    if (problem) throw new InvalidArgumentError(`attribute "${key}"`, problem);
    if (value === null) delete next[key];
    else next[key] = storedValue(value as AttributeInput) as Exclude<AttributeValue, null>;
  }
  const count = Object.keys(next).length;
  if (count > MAX_ATTRIBUTE_KEYS)
    throw new InvalidArgumentError(
      who,
      `would give the workflow ${count} attributes (at most ${MAX_ATTRIBUTE_KEYS}); set a key to null to remove it`,
    );
  return next;
}

/**
 * A Date is kept as its ISO-8601 UTC text (`toISOString()`): one fixed form, so that ranges on
 * timestamps compare the stored text in order (docs/api.md, "Attributes").
 */
export function storedValue(v: AttributeInput): AttributeValue {
  return v instanceof Date ? v.toISOString() : v;
}

/** A checked patch as it is recorded and merged into the row: Dates as their ISO text. */
export function storedPatch(attrs: Readonly<Record<string, AttributeInput>>): Record<string, AttributeValue> {
  return Object.fromEntries(Object.entries(attrs).map(([k, v]) => [k, storedValue(v)]));
}

/** `start(..., { attributes })`: the run's first attributes, bounded as setAttributes is; undefined for none. */
export function startAttributes(attrs: unknown): WorkflowAttributes | undefined {
  if (attrs === undefined) return undefined;
  const merged = mergeAttributes({}, attrs, 'start option attributes');
  return Object.keys(merged).length ? merged : undefined;
}

/**
 * The attributes a loaded run began with: its row's, less every key its recorded setAttributes
 * calls touched (those calls are replayed over them). The start's own are not stored apart; this
 * never counts more keys than the run held at each call, so a replay refuses nothing the live run took.
 */
export function attributesBeforeHistory(
  row: WorkflowAttributes | undefined,
  history: Iterable<{ kind: string; result?: unknown }>,
): WorkflowAttributes {
  if (!row || Object.keys(row).length === 0) return {};
  const out: Record<string, Exclude<AttributeValue, null>> = { ...row };
  for (const op of history) {
    if (op.kind !== 'setAttributes' || !op.result || typeof op.result !== 'object') continue;
    for (const key of Object.keys(op.result)) delete out[key];
  }
  return out;
}
