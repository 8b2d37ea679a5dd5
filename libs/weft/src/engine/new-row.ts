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
  'attributes',
]);

const ON_CONFLICT = ['return-existing', 'reject'];

/** A start's singleton key and what a start that finds one live does; null without one. */
export function singletonOf(opts: StartOptions): { key: string; onConflict: 'return-existing' | 'reject' } | null {
  const o = opts.singleton as unknown;
  if (o === undefined) return null;
  const { key, onConflict = 'return-existing' } = (typeof o === 'object' && o !== null ? o : { key: o }) as {
    key?: unknown;
    onConflict?: unknown;
  };
  const problem = nameProblem(key);
  if (problem) throw new InvalidArgumentError('singleton.key', problem);
  if (onConflict === 'queue') {
    throw new InvalidArgumentError('singleton.onConflict', "'queue' is not built yet; use 'return-existing' or 'reject'");
  }
  if (typeof onConflict !== 'string' || !ON_CONFLICT.includes(onConflict)) {
    throw new InvalidArgumentError('singleton.onConflict', `must be one of ${ON_CONFLICT.join(', ')}`);
  }
  if (opts.idPolicy === 'start-new-if-terminal') {
    throw new InvalidArgumentError('singleton', "does not combine with idPolicy 'start-new-if-terminal'");
  }
  return { key: key as string, onConflict: onConflict as 'return-existing' | 'reject' };
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
  const startIn = startDelay(opts, clock.now());
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
