import { v7 as uuidv7 } from 'uuid';
import { InvalidArgumentError } from '../common/errors.js';
import type { InsertWorkflow } from '../storage/types.js';
import { MAX_DURATION_MS, parseDuration, parseOptionalDuration } from '../common/duration.js';
import type { StartOptions } from '../common/types.js';
import type { QueuedStart } from './queues/options.js';
import type { WorkflowClock } from '../common/clock.js';
import { nameProblem, toStoredJson, validateWorkflowId } from './validation.js';
import { startAttributes } from './attributes.js';
import { WorkflowStatus } from '../common/types.js';

const START_OPTIONS = new Set<string>([
  'workflowId',
  'idPolicy',
  'startAt',
  'startAfter',
  'executionTimeout',
  'parentId',
  'queue',
  'priority',
  'manager',
  'partitionKey',
  'singleton',
  'debounce',
  'attributes',
]);

/** A debounce window (and its maxDelay) past this is a schedule, not a debounce. */
export const MAX_DEBOUNCE_MS = 30 * 86_400_000;
const DEBOUNCE_KEYS = new Set(['key', 'delay', 'maxDelay']);
/** Options a debounced start cannot take: its id is the first caller's, its start time the window's. */
const NOT_WITH_DEBOUNCE = ['workflowId', 'startAt', 'startAfter', 'executionTimeout', 'parentId', 'manager', 'singleton'] as const;

/** A start's debounce window, checked; null without one. */
export function debounceOf(opts: StartOptions): { key: string; delayMs: number; maxDelayMs: number | null } | null {
  const d = opts.debounce as unknown;
  if (d === undefined) return null;
  if (typeof d !== 'object' || d === null)
    throw new InvalidArgumentError('debounce', "must be an object like { key: 'user-1', delay: '5s' }");
  const bad = Object.keys(d).find((k) => !DEBOUNCE_KEYS.has(k));
  if (bad !== undefined) throw new InvalidArgumentError(`debounce.${bad}`, 'is not an option; use key, delay, maxDelay');
  const { key, delay, maxDelay } = d as { key?: unknown; delay?: unknown; maxDelay?: unknown };
  const problem = nameProblem(key);
  if (problem) throw new InvalidArgumentError('debounce.key', problem);
  const within = (v: unknown, option: string, min: number) => {
    const ms = parseDuration(v as string, option);
    if (ms < min || ms > MAX_DEBOUNCE_MS) throw new InvalidArgumentError(option, `must be from ${min} ms to 30 days (got ${ms} ms)`);
    return ms;
  };
  const delayMs = within(delay, 'debounce.delay', 1);
  const maxDelayMs = maxDelay === undefined ? null : within(maxDelay, 'debounce.maxDelay', delayMs);
  const clash = NOT_WITH_DEBOUNCE.find((o) => opts[o] !== undefined);
  if (clash)
    throw new InvalidArgumentError('debounce', `does not combine with ${clash}: every call of a window shares the first call's workflow`);
  return { key: key as string, delayMs, maxDelayMs };
}

const ON_CONFLICT = ['return-existing', 'reject', 'queue'];

type SingletonConflict = 'return-existing' | 'reject' | 'queue';

/** A start's singleton key and what a start that finds one live does; null without one. */
export function singletonOf(opts: StartOptions): { key: string; onConflict: SingletonConflict } | null {
  const o = opts.singleton as unknown;
  if (o === undefined) return null;
  const { key, onConflict = 'return-existing' } = (typeof o === 'object' && o !== null ? o : { key: o }) as {
    key?: unknown;
    onConflict?: unknown;
  };
  const problem = nameProblem(key);
  if (problem) throw new InvalidArgumentError('singleton.key', problem);
  if (typeof onConflict !== 'string' || !ON_CONFLICT.includes(onConflict)) {
    throw new InvalidArgumentError('singleton.onConflict', `must be one of ${ON_CONFLICT.join(', ')}`);
  }
  if (opts.idPolicy === 'start-new-if-terminal') {
    throw new InvalidArgumentError('singleton', "does not combine with idPolicy 'start-new-if-terminal'");
  }
  return { key: key as string, onConflict: onConflict as SingletonConflict };
}

/**
 * Validates everything about a start before anything is written. `queued`: the start's queue and
 * priority, already checked against the declared queues (engine/queues/options.ts `startQueue`).
 */
export function newRow(
  type: string,
  input: unknown,
  opts: StartOptions,
  { maxPayloadBytes, clock }: { maxPayloadBytes: number; clock: Pick<WorkflowClock, 'now'> },
  queued: QueuedStart | null = null,
): InsertWorkflow {
  // A misspelt option (`timeout` for `executionTimeout`) would otherwise be ignored without a word.
  const unknown = Object.keys(opts ?? {}).filter((k) => !START_OPTIONS.has(k));
  if (unknown.length) {
    throw new InvalidArgumentError('start options', `unknown option "${unknown[0]}"; the options are ${[...START_OPTIONS].join(', ')}`);
  }
  // A generated id is a UUIDv7 (time first): a new workflow's rows and index entries land on the
  // rightmost pages of the keys of tables that grow to millions of rows, not on a random page
  // each (docs/decisions/0010).
  const id = opts.workflowId === undefined ? uuidv7() : validateWorkflowId(opts.workflowId);
  const parentId = opts.parentId === undefined ? null : validateWorkflowId(opts.parentId);
  const stored = toStoredJson(input, 'Workflow input', maxPayloadBytes);
  const debounce = debounceOf(opts);
  const startIn = debounce ? debounce.delayMs : startDelay(opts, clock.now());
  const timeoutMs = parseOptionalDuration(opts.executionTimeout, 'executionTimeout');
  const delayed = startIn > 0;
  const timers: InsertWorkflow['timers'] = [];
  if (delayed) timers.push({ kind: 'delayed-start', delayMs: startIn });
  if (timeoutMs !== undefined) timers.push({ kind: 'execution-deadline', delayMs: startIn + timeoutMs });
  const row: InsertWorkflow = {
    id,
    type,
    // A delayed start into a queue waits `pending` with its queue, and is enqueued when it fires.
    status: delayed ? WorkflowStatus.Pending : queued ? WorkflowStatus.Enqueued : WorkflowStatus.Running,
    input: stored,
    parentId,
    deadlineInMs: timeoutMs === undefined ? null : startIn + timeoutMs,
    startInMs: delayed ? startIn : null,
    timers,
  };
  row.attributes = startAttributes(opts.attributes);
  if (queued) Object.assign(row, queued);
  if (debounce) row.debounce = debounce;
  return withSingleton(row, opts);
}

function withSingleton(row: InsertWorkflow, opts: StartOptions): InsertWorkflow {
  const singleton = singletonOf(opts);
  if (singleton) row.singletonKey = singleton.key;
  return row;
}

/** ms from now (`nowMs`, workflow time) to the start. */
function startDelay(opts: StartOptions, nowMs: number): number {
  if (opts.startAt !== undefined && opts.startAfter !== undefined) {
    throw new InvalidArgumentError('start options', 'give startAt or startAfter, not both');
  }
  if (opts.startAt !== undefined) {
    if (!(opts.startAt instanceof Date) || Number.isNaN(opts.startAt.getTime())) {
      throw new InvalidArgumentError('startAt', 'must be a valid Date');
    }
    const delay = Math.max(0, opts.startAt.getTime() - nowMs);
    // The same bound as startAfter: the delay becomes a timestamp in PostgreSQL.
    if (delay > MAX_DURATION_MS) throw new InvalidArgumentError('startAt', 'must be at most 100 years from now');
    return delay;
  }
  return opts.startAfter === undefined ? 0 : parseDuration(opts.startAfter, 'startAfter');
}
