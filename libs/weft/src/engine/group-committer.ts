import { Batcher } from '../storage/batcher.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types.js';

/**
 * Commits waiting from which, with both statements free, they go in two statements side by side
 * (docs/decisions/0068: 16 split groups so small that the second statement's cost ate the gain).
 */
export const SPREAD_FROM = 32;

/**
 * Group commit of advances: many workflows' commits share one statement, each keeping its own
 * version check; never two commands for one workflow in a statement (their CAS would be
 * ambiguous). See docs/decisions/0001-group-commit.md.
 */
export class GroupCommitter extends Batcher<AdvanceCommand, AdvanceOutcome> {
  constructor(store: WorkflowStore, maxBatch = 256, maxInFlight = 2) {
    super(
      (commands) => store.workflows.advanceMany(commands),
      (c) => c.workflowId,
      // gather: the commits of the runs one statement's outcomes resumed go together (decision 0062);
      // spread: a group of them large enough is shared among the free statements (decision 0068)
      { maxBatch, maxInFlight, gather: true, spread: SPREAD_FROM },
    );
  }
}
