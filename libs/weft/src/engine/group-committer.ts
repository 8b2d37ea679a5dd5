import { Batcher } from '../storage/batcher.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { AdvanceCommand, AdvanceOutcome, RidingStatement } from '../storage/types.js';

/**
 * Group commit of advances: many workflows' commits share one statement, each keeping its own
 * version check; never two commands for one workflow in a statement (their CAS would be
 * ambiguous). See docs/decisions/0001-group-commit.md. `riders` may give statements to send right
 * behind a batch's, in the same write (a queue's admission after its runs' ends, docs/decisions/0058).
 */
export class GroupCommitter extends Batcher<AdvanceCommand, AdvanceOutcome> {
  constructor(store: WorkflowStore, riders?: (commands: AdvanceCommand[]) => RidingStatement[], maxBatch = 256, maxInFlight = 2) {
    super(
      (commands) => store.workflows.advanceMany(commands, riders && (() => riders(commands))),
      (c) => c.workflowId,
      maxBatch,
      maxInFlight,
    );
  }
}
