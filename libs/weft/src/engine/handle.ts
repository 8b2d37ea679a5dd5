import type { Duration } from '../common/duration.js';
import type { WorkflowDescription, WorkflowStatus } from '../common/types.js';

/** The engine operations a handle forwards to (WeftEngine implements them). */
export interface WorkflowOperations {
  result<R>(workflowId: string, opts: { timeout?: Duration }): Promise<R>;
  describe(workflowId: string): Promise<WorkflowDescription>;
  cancel(workflowId: string, reason?: string): Promise<void>;
  signal(workflowId: string, name: string, payload?: unknown): Promise<void>;
  update<R>(workflowId: string, name: string, args: unknown, opts: { timeout?: Duration }): Promise<R>;
  query<R>(workflowId: string, name: string, args?: unknown): Promise<R>;
}

/** A reference to one workflow; cheap to create, holds nothing but the id. */
export class WorkflowHandle<O = unknown> {
  /** @internal Handles come from engine.start(), engine.handle() and friends. */
  constructor(
    private readonly engine: WorkflowOperations,
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
