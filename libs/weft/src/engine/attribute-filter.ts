// list({ attributes }): the filter checked against its bounds and turned into the repository's
// AttributeQuery; and the text form the HTTP API and the CLI share (`tenant=42`, `amount>100`).
import { InvalidArgumentError } from '../common/errors.js';
import type { AttributeCondition, AttributeFilter, AttributeInput, AttributeValue } from '../common/types.js';
import type { AttributeQuery } from '../storage/types.js';
import { MAX_ATTRIBUTE_KEY_LENGTH, MAX_ATTRIBUTE_STRING_LENGTH, storedValue } from './attributes.js';
import { unstorableText } from './validation.js';

/** Keys one filter may name. */
export const MAX_FILTER_KEYS = 16;
/** Values one `in` may list. */
export const MAX_IN_VALUES = 100;

const KEY = /^[A-Za-z][A-Za-z0-9_.-]*$/;
const RANGE_OPS = { gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;
const CONDITION_KEYS = ['eq', 'in', ...Object.keys(RANGE_OPS)];

function checkKey(key: string): void {
  if (key.length > MAX_ATTRIBUTE_KEY_LENGTH || !KEY.test(key))
    throw new InvalidArgumentError(
      `attribute filter key ${JSON.stringify(key.slice(0, 80))}`,
      `must start with a letter, hold only letters, digits, "_", "-" and ".", and be at most ${MAX_ATTRIBUTE_KEY_LENGTH} characters`,
    );
}

function scalar(key: string, v: unknown): AttributeValue {
  const what = `attribute filter "${key}"`;
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) throw new InvalidArgumentError(what, 'has an invalid Date');
    return storedValue(v);
  }
  if (typeof v === 'number' && !Number.isFinite(v)) throw new InvalidArgumentError(what, `has ${v}, which JSON cannot hold`);
  if (typeof v === 'string') {
    if (v.length > MAX_ATTRIBUTE_STRING_LENGTH)
      throw new InvalidArgumentError(what, `has a value of ${v.length} characters (at most ${MAX_ATTRIBUTE_STRING_LENGTH})`);
    const bad = unstorableText(v);
    if (bad) throw new InvalidArgumentError(what, `has a value that contains ${bad}`);
    return v;
  }
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  throw new InvalidArgumentError(what, 'compares with a string, a number, a boolean or a Date');
}

/** A range's bound: a number, or a timestamp as the ISO text Dates are stored as. */
function bound(key: string, op: string, v: unknown): { on: 'number' | 'timestamp'; value: number | string } {
  if (typeof v === 'number' && Number.isFinite(v)) return { on: 'number', value: v };
  const at = v instanceof Date ? v : typeof v === 'string' && v.length <= 64 ? new Date(v) : undefined;
  if (at && !Number.isNaN(at.getTime()) && (v instanceof Date || /^\d{4}-\d{2}-\d{2}/.test(v as string)))
    return { on: 'timestamp', value: at.toISOString() };
  throw new InvalidArgumentError(`attribute filter "${key}" ${op}`, 'takes a finite number, a Date or an ISO-8601 timestamp');
}

function isConditionObject(c: AttributeCondition): c is Exclude<AttributeCondition, AttributeInput> {
  return c !== null && typeof c === 'object' && !(c instanceof Date);
}

/** The filter checked (bounds, types) as the repository's query; undefined when it names no key. */
export function attributeQuery(filter: unknown): AttributeQuery | undefined {
  if (filter === undefined) return undefined;
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter))
    throw new InvalidArgumentError('attributes', 'must be an object of conditions by attribute key');
  const entries = Object.entries(filter as AttributeFilter);
  if (entries.length > MAX_FILTER_KEYS)
    throw new InvalidArgumentError('attributes', `names ${entries.length} keys (at most ${MAX_FILTER_KEYS})`);
  if (entries.length === 0) return undefined;
  const equal: Record<string, AttributeValue> = {};
  const query: AttributeQuery = { contains: [], ranges: [] };
  for (const [key, condition] of entries) {
    checkKey(key);
    if (condition !== undefined) addCondition(key, condition, equal, query);
  }
  if (Object.keys(equal).length) query.contains.unshift([equal]);
  return query.contains.length || query.ranges.length ? query : undefined;
}

/** One key's condition into the query: equalities gathered in `equal` (one containment for all). */
function addCondition(key: string, condition: AttributeCondition, equal: Record<string, AttributeValue>, query: AttributeQuery): void {
  if (!isConditionObject(condition)) {
    equal[key] = scalar(key, condition);
    return;
  }
  const unknown = Object.keys(condition).filter((k) => !CONDITION_KEYS.includes(k));
  if (unknown.length) throw new InvalidArgumentError(`attribute filter "${key}"`, `has "${unknown[0]}"; use ${CONDITION_KEYS.join(', ')}`);
  if (condition.eq !== undefined) equal[key] = scalar(key, condition.eq);
  if (condition.in !== undefined) {
    if (!Array.isArray(condition.in) || condition.in.length === 0 || condition.in.length > MAX_IN_VALUES)
      throw new InvalidArgumentError(`attribute filter "${key}" in`, `must list 1 to ${MAX_IN_VALUES} values`);
    query.contains.push(condition.in.map((v) => ({ [key]: scalar(key, v) })));
  }
  for (const [name, op] of Object.entries(RANGE_OPS)) {
    const v = condition[name as keyof typeof RANGE_OPS];
    if (v !== undefined) query.ranges.push({ key, op, ...bound(key, name, v) });
  }
}

const WHERE = /^([A-Za-z][A-Za-z0-9_.-]*)\s*(>=|<=|=|>|<)\s*(.*)$/s;

/**
 * The values a text means: `42` is the number 42 or the text "42", `true` the boolean or the
 * text, `"42"` (JSON-quoted) only the text; anything else is text.
 */
export function textValues(text: string): AttributeValue[] {
  if (text.startsWith('"') && text.endsWith('"') && text.length >= 2) {
    try {
      const v = JSON.parse(text) as unknown;
      if (typeof v === 'string') return [v];
    } catch {
      // not JSON: plain text
    }
  }
  if (text === 'true' || text === 'false') return [text === 'true', text];
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text) && Number.isFinite(Number(text))) return [Number(text), text];
  return [text];
}

/**
 * Conditions in text, as `weft list --where` and `?where=` take them: `key=value` (repeated for
 * the same key: any of them), `key>v`, `key>=v`, `key<v`, `key<=v` on a number or an ISO-8601
 * timestamp. Every condition must hold.
 */
export function parseWhere(conditions: readonly string[], into: AttributeFilter = {}): AttributeFilter {
  const byKey = into as Record<string, { in?: AttributeValue[]; gt?: unknown; gte?: unknown; lt?: unknown; lte?: unknown }>;
  for (const text of conditions) {
    const m = WHERE.exec(text.trim());
    if (!m)
      throw new InvalidArgumentError(
        `condition ${JSON.stringify(text.slice(0, 80))}`,
        'must be key=value, key>value, key>=value, key<value or key<=value, the key starting with a letter',
      );
    const [, key, op, raw] = m;
    checkKey(key);
    const c = (byKey[key] ??= {});
    if (op === '=') {
      c.in = [...(c.in ?? []), ...textValues(raw)];
      continue;
    }
    const name = ({ '>': 'gt', '>=': 'gte', '<': 'lt', '<=': 'lte' } as const)[op as '>' | '>=' | '<' | '<='];
    const n = Number(raw);
    c[name] = raw.trim() !== '' && Number.isFinite(n) ? n : raw.trim();
  }
  return into;
}
