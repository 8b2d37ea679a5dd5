// How a workflow ended, as waiters and its parent learn it.
import type { MessageInsert } from '../storage/types.js';

/** The durable message a child's end sends its parent. */
export function childNotice(parentId: string, childId: string, s: Settled): MessageInsert {
  return { workflowId: parentId, kind: 'child', name: childId, payload: { status: s.status, output: s.output, error: s.error } };
}

export interface Settled {
  status: string;
  output: unknown;
  error: unknown;
}
