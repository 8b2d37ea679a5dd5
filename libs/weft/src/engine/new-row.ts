import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../common/errors.js';
import type { InsertWorkflow } from '../storage/repositories/workflow.repository.js';
import { MAX_DURATION_MS, parseDuration, parseOptionalDuration } from '../common/duration.js';
import type { StartOptions } from '../common/types.js';
import { toStoredJson, validateWorkflowId } from './validation.js';

/** Validates everything about a start before anything is written. */
export function newRow(type: string, input: unknown, opts: StartOptions, maxPayloadBytes: number): InsertWorkflow {
  const id = opts.workflowId === undefined ? randomUUID() : validateWorkflowId(opts.workflowId);
  const parentId = opts.parentId === undefined ? null : validateWorkflowId(opts.parentId);
  const stored = toStoredJson(input, 'Workflow input', maxPayloadBytes);
  const startIn = startDelay(opts);
  const timeoutMs = parseOptionalDuration(opts.executionTimeout, 'executionTimeout');
  const delayed = startIn > 0;
  const timers: InsertWorkflow['timers'] = [];
  if (delayed) timers.push({ kind: 'delayed-start', delayMs: startIn });
  if (timeoutMs !== undefined) timers.push({ kind: 'execution-deadline', delayMs: startIn + timeoutMs });
  return {
    id,
    type,
    status: delayed ? 'pending' : 'running',
    input: stored,
    parentId,
    deadlineInMs: timeoutMs === undefined ? null : startIn + timeoutMs,
    startInMs: delayed ? startIn : null,
    timers,
  };
}

function startDelay(opts: StartOptions): number {
  if (opts.startAt !== undefined && opts.startAfter !== undefined) {
    throw new InvalidArgumentError('start options', 'give startAt or startAfter, not both');
  }
  if (opts.startAt !== undefined) {
    if (!(opts.startAt instanceof Date) || Number.isNaN(opts.startAt.getTime())) {
      throw new InvalidArgumentError('startAt', 'must be a valid Date');
    }
    const delay = Math.max(0, opts.startAt.getTime() - Date.now());
    // The same bound as startAfter: the delay becomes a timestamp in PostgreSQL.
    if (delay > MAX_DURATION_MS) throw new InvalidArgumentError('startAt', 'must be at most 100 years from now');
    return delay;
  }
  return opts.startAfter === undefined ? 0 : parseDuration(opts.startAfter, 'startAfter');
}
