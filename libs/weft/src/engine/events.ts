// engine.getEvent (docs/events-and-streams.md): reads the key's event, or waits for it, woken by
// the NOTIFY of the commit that writes it, which carries the value when short: no read then.
import { WorkflowNotFoundError } from '../common/errors.js';
import { Duration, parseDuration } from '../common/duration.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { TalkWaiters } from './talk-waiters.js';
import { isTerminal } from './transitions.js';
import { validateName, validateWorkflowId } from './validation.js';

/** The wait between reads when no notification comes (one lost while LISTEN reconnected). */
export const TALK_FALLBACK_POLL_MS = 500;

/** getEvent's wait when the caller gives none. */
const DEFAULT_TIMEOUT = '60s';

export interface EventReaderDeps {
  store: WorkflowStore;
  waiters: TalkWaiters;
  isClosed(): boolean;
}

/**
 * The key's value once set; null on timeout, or at once when the workflow has ended without it.
 * A workflow that does not exist is WorkflowNotFoundError.
 */
export async function getEvent<T>(
  deps: EventReaderDeps,
  workflowId: string,
  key: string,
  opts: { timeout?: Duration } = {},
): Promise<T | null> {
  validateWorkflowId(workflowId);
  validateName('event key', key);
  const timeoutMs = parseDuration(opts.timeout ?? DEFAULT_TIMEOUT, 'getEvent timeout');
  const deadline = Date.now() + timeoutMs;
  const watch = deps.waiters.watch(workflowId, key);
  try {
    for (;;) {
      const row = await deps.store.events.get(workflowId, key);
      if (!row) throw new WorkflowNotFoundError(workflowId);
      if (row.found) return row.value as T;
      if (isTerminal(row.status)) return null;
      const left = deadline - Date.now();
      if (left <= 0 || deps.isClosed()) return null;
      await watch.next(Math.min(left, TALK_FALLBACK_POLL_MS));
      // Sent by the statement that stored it, delivered only once that committed: the value as read.
      const carried = watch.carried()?.event;
      if (carried !== undefined) return (await deps.store.events.fromNotice(carried)) as T;
    }
  } finally {
    watch.close();
  }
}
