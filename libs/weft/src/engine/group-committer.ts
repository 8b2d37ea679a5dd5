import { Batcher } from '../storage/batcher.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types.js';

/**
 * Group commit of advances: many workflows' commits share one statement, each keeping its own
 * version check; never two commands for one workflow in a statement (their CAS would be
 * ambiguous). See docs/decisions/0001-group-commit.md. Ends that hand their queue slot on go in
 * statements of their own, with their own statements in flight, so that the steps of other runs
 * do not wait for the hand-off's CTEs (measured and not taken: docs/decisions/0059).
 */
export class GroupCommitter {
  private readonly steps: Batcher<AdvanceCommand, AdvanceOutcome>;
  private readonly handoffs: Batcher<AdvanceCommand, AdvanceOutcome>;

  constructor(store: WorkflowStore, maxBatch = 256, maxInFlight = 2) {
    const send = (commands: AdvanceCommand[]) => store.workflows.advanceMany(commands);
    this.steps = new Batcher(send, (c) => c.workflowId, maxBatch, maxInFlight);
    this.handoffs = new Batcher(send, (c) => c.workflowId, maxBatch, maxInFlight);
  }

  /** Statements sent, for benchmarks and metrics. */
  get statements(): number {
    return this.steps.statements + this.handoffs.statements;
  }

  submit(command: AdvanceCommand): Promise<AdvanceOutcome> {
    return (command.handoff !== undefined ? this.handoffs : this.steps).submit(command);
  }

  /** Resolves once each committer was found with nothing queued or in flight (the form measured). */
  async idle(): Promise<void> {
    await Promise.all([this.steps.idle(), this.handoffs.idle()]);
  }
}
