import { InvalidArgumentError, WorkflowFailedError } from '../common/errors.js';
import type { WorkflowRow } from '../storage/types.js';
import type { Settled } from './settled.js';
import type { WorkflowFailure } from '../common/types.js';
import { WorkflowStatus } from '../common/types.js';

export function settledValue<O>(workflowId: string, s: Settled | WorkflowRow): O {
  if (s.status === WorkflowStatus.Completed) return s.output as O;
  throw new WorkflowFailedError(workflowId, s.status, (s.error as WorkflowFailure | null) ?? null);
}

/**
 * The cursor carries the database's own timestamp text (microseconds survive the round trip) and
 * the order it was made for: a position means nothing in the other order.
 */
export function encodeCursor(r: { cursorAt: string; id: string }, order: 'newest' | 'oldest' = 'oldest'): string {
  return Buffer.from(JSON.stringify(order === 'newest' ? [r.cursorAt, r.id, 'newest'] : [r.cursorAt, r.id])).toString('base64url');
}

export function decodeCursor(cursor: string, order: 'newest' | 'oldest' = 'oldest'): { at: string; id: string } {
  let made: string;
  let out: { at: string; id: string };
  try {
    const [at, id, o] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string, string?];
    if (typeof id !== 'string' || typeof at !== 'string' || Number.isNaN(Date.parse(at))) throw new Error('bad');
    made = o ?? 'oldest';
    out = { at, id };
  } catch {
    throw new InvalidArgumentError('cursor', 'is not a cursor returned by list()');
  }
  if (made !== order) throw new InvalidArgumentError('cursor', `was returned by a list in order "${made}"; list in that order to use it`);
  return out;
}
