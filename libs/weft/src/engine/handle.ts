import type { Duration } from './duration.js';
import type { WeftEngine } from './engine.js';
import type { WorkflowDescription, WorkflowStatus } from './types.js';

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

  signal(name: string, payload?: unknown): Promise<void> {
    return this.engine.signal(this.workflowId, name, payload);
  }

  update<R = unknown>(name: string, args?: unknown, opts: { timeout?: Duration } = {}): Promise<R> {
    return this.engine.update<R>(this.workflowId, name, args, opts);
  }

  query<R = unknown>(name: string, args?: unknown): Promise<R> {
    return this.engine.query<R>(this.workflowId, name, args);
  }
}
