import { ApplicationError, InvalidArgumentError, NonRetryableError } from '../../common/errors.js';
import { parseCompletionToken } from '../../engine/run/external-completions.js';
import { Duration, parseDuration } from '../../common/duration.js';
import { parseWhere } from '../../engine/attribute-filter.js';
import { type IdPolicy, type ListFilter, type StartOptions, WORKFLOW_STATUSES, WorkflowStatus } from '../../common/types.js';

// Hand-written validation of HTTP input: typed WeftErrors, mapped to 400 by the filter.

const ID_POLICIES: IdPolicy[] = ['return-existing', 'reject-duplicate', 'start-new-if-terminal'];
const STATUSES: readonly WorkflowStatus[] = WORKFLOW_STATUSES;
export const MAX_RESULT_WAIT_MS = 60_000;
/** An update holds its HTTP request open until answered: the same bound as a result wait. */
export const MAX_UPDATE_WAIT_MS = MAX_RESULT_WAIT_MS;

type Json = Record<string, unknown>;

/** A JSON object body with only the allowed keys; an absent body is `{}`. */
export function objectBody(body: unknown, allowed: readonly string[], what = 'request body'): Json {
  if (body === undefined || body === null || body === '') return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw new InvalidArgumentError(what, 'must be a JSON object');
  const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
  if (unknown.length) throw new InvalidArgumentError(what, `has unknown field(s) ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`);
  return body as Json;
}

function optionalString(v: unknown, name: string): string | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new InvalidArgumentError(name, 'must be a string');
  return v;
}

function optionalDuration(v: unknown, name: string): Duration | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' && typeof v !== 'string') throw new InvalidArgumentError(name, "must be milliseconds or a string like '10s'");
  parseDuration(v, name);
  return v as Duration;
}

export interface StartRequest {
  type: string;
  input: unknown;
  options: StartOptions;
}

const START_FIELDS = ['type', 'input', 'workflowId', 'idPolicy', 'startAt', 'startAfter', 'executionTimeout', 'attributes'] as const;

export function parseStartRequest(body: unknown): StartRequest {
  return startRequestOf(objectBody(body, START_FIELDS));
}

export interface UpdateWithStartRequest extends StartRequest {
  update: string;
  args: unknown;
  timeout: Duration | undefined;
}

/**
 * A start's fields (workflowId required: the update goes to that workflow, started or found by the
 * id policy) with the update's `update` (its name), `args` and `timeout`.
 */
export function parseUpdateWithStartRequest(body: unknown): UpdateWithStartRequest {
  const b = objectBody(body, [...START_FIELDS, 'update', 'args', 'timeout']);
  if (typeof b.workflowId !== 'string' || b.workflowId.length === 0) {
    throw new InvalidArgumentError('workflowId', 'is required: the workflow to start or find and update');
  }
  if (typeof b.update !== 'string' || b.update.length === 0) throw new InvalidArgumentError('update', "must be the update handler's name");
  const { update, args, timeout, ...start } = b;
  const { args: checkedArgs, timeout: checkedTimeout } = parseUpdateBody({ args, timeout });
  return { ...startRequestOf(start), update, args: checkedArgs, timeout: checkedTimeout };
}

function startRequestOf(b: Json): StartRequest {
  if (typeof b.type !== 'string' || b.type.length === 0) throw new InvalidArgumentError('type', 'must be a registered workflow type name');
  const options: StartOptions = {};
  if (b.workflowId !== undefined) options.workflowId = b.workflowId as string; // the engine validates ids
  if (b.idPolicy !== undefined) {
    if (!ID_POLICIES.includes(b.idPolicy as IdPolicy))
      throw new InvalidArgumentError('idPolicy', `must be one of ${ID_POLICIES.join(', ')}`);
    options.idPolicy = b.idPolicy as IdPolicy;
  }
  const startAt = optionalString(b.startAt, 'startAt');
  if (startAt !== undefined) {
    const at = new Date(startAt);
    if (Number.isNaN(at.getTime())) throw new InvalidArgumentError('startAt', 'must be an ISO 8601 date-time');
    options.startAt = at;
  }
  const startAfter = optionalDuration(b.startAfter, 'startAfter');
  if (startAfter !== undefined) options.startAfter = startAfter;
  const executionTimeout = optionalDuration(b.executionTimeout, 'executionTimeout');
  if (executionTimeout !== undefined) options.executionTimeout = executionTimeout;
  if (b.attributes !== undefined) options.attributes = b.attributes as StartOptions['attributes']; // bounded by the engine
  return { type: b.type, input: b.input, options };
}

const LIST_FIELDS = ['status', 'type', 'idPrefix', 'where', 'order', 'include', 'limit', 'cursor'] as const;
/** Conditions (`attr.<key>` and `where` together) one request may carry, before they are parsed. */
const MAX_CONDITIONS = 64;

/** A query value as its list of texts (a repeated parameter is an array). */
function texts(v: unknown, name: string): string[] {
  const all = Array.isArray(v) ? v : [v];
  if (all.some((x) => typeof x !== 'string')) throw new InvalidArgumentError(name, 'must be text (a repeated query parameter)');
  return all as string[];
}

/** `attr.<key>=<value>` and `where=` as --where conditions, and the other parameters. */
function attributeConditions(query: unknown): { conditions: string[]; rest: Record<string, unknown> } {
  const conditions: string[] = [];
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) {
    if (k.startsWith('attr.')) for (const t of texts(v, k)) conditions.push(`${k.slice(5)}=${t}`);
    else if (k === 'where') conditions.push(...texts(v, 'where'));
    else rest[k] = v;
  }
  if (conditions.length > MAX_CONDITIONS)
    throw new InvalidArgumentError('query string', `has ${conditions.length} attribute conditions (at most ${MAX_CONDITIONS})`);
  return { conditions, rest };
}

/**
 * `?status=running,failed&type=x&idPrefix=order-&limit=50&cursor=...`; status may also repeat.
 * Attributes: `attr.<key>=<value>` (repeated for any of several values) and `where=<condition>`
 * (`amount>100`, as `weft list --where`); `order=newest|oldest`; `include=input,output`.
 */
export function parseListQuery(query: unknown): ListFilter {
  const { conditions, rest } = attributeConditions(query);
  const q = objectBody(rest, LIST_FIELDS, 'query string');
  const filter: ListFilter = {};
  if (conditions.length) filter.attributes = parseWhere(conditions); // keys and values checked by the engine
  const order = optionalString(q.order, 'order');
  if (order !== undefined) filter.order = order as ListFilter['order']; // checked by the engine
  if (q.include !== undefined) filter.include = texts(q.include, 'include').flatMap((s) => s.split(',')) as ListFilter['include'];
  if (q.status !== undefined) {
    const raw = (Array.isArray(q.status) ? q.status : [q.status]).flatMap((s) => String(s).split(','));
    const statuses = raw.map((s) => s.trim()).filter(Boolean);
    const bad = statuses.filter((s) => !STATUSES.includes(s as WorkflowStatus));
    if (bad.length || statuses.length === 0) throw new InvalidArgumentError('status', `must be among ${STATUSES.join(', ')}`);
    filter.status = statuses as WorkflowStatus[];
  }
  const type = optionalString(q.type, 'type');
  if (type !== undefined) filter.type = type;
  const idPrefix = optionalString(q.idPrefix, 'idPrefix');
  if (idPrefix !== undefined) filter.idPrefix = idPrefix; // length checked by the engine
  const limit = optionalString(q.limit, 'limit');
  if (limit !== undefined) {
    if (!/^\d+$/.test(limit)) throw new InvalidArgumentError('limit', 'must be an integer from 1 to 1000');
    filter.limit = Number(limit); // range checked by the engine
  }
  const cursor = optionalString(q.cursor, 'cursor');
  if (cursor !== undefined) filter.cursor = cursor;
  return filter;
}

/** `?timeout=` of the result endpoint: 0 (answer at once) up to 60 s. */
export function parseResultTimeout(v: unknown): number {
  if (v === undefined || v === '') return 0;
  if (typeof v !== 'string') throw new InvalidArgumentError('timeout', "must be milliseconds or a string like '10s'");
  const ms = parseDuration(v, 'timeout');
  if (ms > MAX_RESULT_WAIT_MS) throw new InvalidArgumentError('timeout', `must be at most ${MAX_RESULT_WAIT_MS / 1000}s`);
  return ms;
}

/** Where a stream's events start: after `Last-Event-ID` (an offset) when a client resumes, else `?from=` (inclusive, default 0). */
export function parseStreamStart(from: unknown, lastEventId: unknown): number {
  const offset = (v: unknown, name: string): number => {
    if (typeof v !== 'string' || !/^\d{1,10}$/.test(v) || Number(v) > 2 ** 31 - 2) {
      throw new InvalidArgumentError(name, 'must be a stream offset: an integer from 0');
    }
    return Number(v);
  };
  if (lastEventId !== undefined && lastEventId !== '') return offset(lastEventId, 'Last-Event-ID') + 1;
  return from === undefined || from === '' ? 0 : offset(from, 'from');
}

/** `{ reason? }` of cancel and suspend. */
export function parseReason(body: unknown): string | undefined {
  const b = objectBody(body, ['reason']);
  const reason = optionalString(b.reason, 'reason');
  if (reason !== undefined && reason.length > 1000) throw new InvalidArgumentError('reason', 'must be at most 1000 characters');
  return reason;
}

export function parseUpdateBody(body: unknown): { args: unknown; timeout: Duration | undefined } {
  const b = objectBody(body, ['args', 'timeout']);
  const timeout = optionalDuration(b.timeout, 'timeout');
  if (timeout !== undefined && parseDuration(timeout, 'timeout') > MAX_UPDATE_WAIT_MS) {
    throw new InvalidArgumentError('timeout', `must be at most ${MAX_UPDATE_WAIT_MS / 1000}s`);
  }
  return { args: b.args, timeout };
}

/** `{ fromStep, workflowId? }` of fork: fromStep a seq or a step name (checked by the engine). */
export function parseForkBody(body: unknown): { fromStep: number | string; workflowId?: string } {
  const b = objectBody(body, ['fromStep', 'workflowId']);
  if (typeof b.fromStep !== 'number' && typeof b.fromStep !== 'string')
    throw new InvalidArgumentError('fromStep', 'must be a seq (a number) or a step name');
  const workflowId = optionalString(b.workflowId, 'workflowId');
  return workflowId === undefined ? { fromStep: b.fromStep } : { fromStep: b.fromStep, workflowId };
}

/** The body of POST :id/steps/complete ({ token, result }) or :id/steps/fail ({ token, error }): the token must name this workflow. */
export function parseCompletionBody(
  workflowId: string,
  body: unknown,
  field: 'result' | 'error',
): { token: string; result?: unknown; error?: unknown } {
  const b = objectBody(body, ['token', field]);
  const { key } = parseCompletionToken(b.token);
  if (key.workflowId !== workflowId)
    throw new InvalidArgumentError('token', `belongs to workflow "${key.workflowId}", not "${workflowId}"`);
  return { token: b.token as string, [field]: b[field] };
}

/** failStep's `error` over HTTP: an ApplicationError (a NonRetryableError with `nonRetryable: true`) built from its fields. */
export function parseStepError(error: unknown): ApplicationError {
  const e = objectBody(error, ['message', 'name', 'code', 'details', 'nonRetryable'], 'error');
  if (typeof e.message !== 'string' || e.message.length === 0 || e.message.length > 1000) {
    throw new InvalidArgumentError('error.message', 'must be a string of 1 to 1000 characters');
  }
  if (e.code !== undefined && (typeof e.code !== 'string' || e.code.length > 255))
    throw new InvalidArgumentError('error.code', 'must be a string of at most 255 characters');
  if (e.name !== undefined && (typeof e.name !== 'string' || e.name.length === 0 || e.name.length > 255)) {
    throw new InvalidArgumentError('error.name', 'must be a string of 1 to 255 characters');
  }
  if (e.nonRetryable !== undefined && typeof e.nonRetryable !== 'boolean')
    throw new InvalidArgumentError('error.nonRetryable', 'must be a boolean');
  const options = { code: e.code as string | undefined, details: e.details };
  const err = e.nonRetryable ? new NonRetryableError(e.message, options) : new ApplicationError(e.message, options);
  if (e.name !== undefined) err.name = e.name as string;
  return err;
}
