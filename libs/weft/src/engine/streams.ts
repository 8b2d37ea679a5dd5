// engine.readStream (docs/events-and-streams.md): a stream's entries from an offset, as an async
// iterator that waits for new ones (woken by the NOTIFY of the statement that appends them, which
// carries the entry when it is that statement's one entry of the key and short) and
// ends after the last entry once the stream is closed or the workflow has ended.
import { InvalidArgumentError, WorkflowNotFoundError } from '../common/errors.js';
import type { StreamEntry } from '../common/types.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { TALK_FALLBACK_POLL_MS } from './events.js';
import type { TalkWaiters } from './talk-waiters.js';
import { isTerminal } from './transitions.js';
import { validateName, validateWorkflowId } from './validation.js';

/** Entries read per round trip. */
const READ_BATCH = 500;

export interface StreamReaderDeps {
  store: WorkflowStore;
  waiters: TalkWaiters;
  isClosed(): boolean;
}

/** Checked at the call (not at the first next()), so a bad argument fails where it is given. */
export function checkStreamArgs(workflowId: string, key: string, from: unknown): number {
  validateWorkflowId(workflowId);
  validateName('stream key', key);
  const offset = from ?? 0;
  if (typeof offset !== 'number' || !Number.isInteger(offset) || offset < 0 || offset > 2 ** 31 - 1) {
    throw new InvalidArgumentError('readStream from', 'must be an offset: an integer from 0');
  }
  return offset;
}

export async function* readStream(deps: StreamReaderDeps, workflowId: string, key: string, from: number): AsyncGenerator<StreamEntry> {
  const watch = deps.waiters.watch(workflowId, key);
  try {
    let next = from;
    for (;;) {
      const r = await deps.store.streams.read(workflowId, key, next, READ_BATCH);
      if (!r) throw new WorkflowNotFoundError(workflowId);
      for (const e of r.entries) {
        next = e.offset + 1;
        yield { offset: e.offset, value: e.value, at: e.at, attempt: e.attempt };
      }
      if (r.entries.length === READ_BATCH) continue;
      // Read in one statement with the entries: closed or ended there, none follows what it returned.
      if (r.closed || isTerminal(r.status) || deps.isClosed()) return;
      await watch.next(TALK_FALLBACK_POLL_MS);
      // The entries the notices carried, from the next one on while they follow each other: yielded
      // at once (each is committed: a NOTIFY goes out with its commit); the read that follows finds
      // what came after them (or in a gap: a value too long for a notice), the close or the end.
      for (const entry of watch.takeEntries()) {
        if (entry.offset !== next) continue;
        next = entry.offset + 1;
        yield await deps.store.streams.fromNotice(entry);
      }
    }
  } finally {
    watch.close();
  }
}
