import type { Duration } from './duration';
import type { WeftEngine } from './engine';
import type { WorkflowDescription, WorkflowStatus } from './types';

/** A reference to one workflow; cheap to create, holds nothing but the id. */
export class WorkflowHandle<O = unknown> {
  constructor(
    private readonly engine: WeftEngine,
    readonly workflowId: string,
  ) {}

  result<R = O>(opts: { timeout?: Duration } = {}): Promise<R> {
    return this.engine.result<R>(this.workflowId, opts);
  }

  async status(): Promise<WorkflowStatus> {
    return (await this.engine.describe(this.workflowId)).status;
  }

  describe(): Promise<WorkflowDescription> {
    return this.engine.describe(this.workflowId);
  }

  cancel(reason?: string): Promise<void> {
    return this.engine.cancel(this.workflowId, reason);
  }
}
