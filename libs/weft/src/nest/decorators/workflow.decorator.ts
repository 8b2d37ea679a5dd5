import { WEFT_WORKFLOW_METADATA } from '../weft.constants.js';

export interface WorkflowOptions {
  /** Shown in start-up logs. */
  description?: string;
  /**
   * The code's version (1 to 64 characters, e.g. '2026-12-04' or '3'): recorded with every run
   * this code starts and shown by describe, list and the dashboard (docs/versioning.md).
   */
  version?: string;
  /** Every start of this type goes through this queue (declared in the `queues` option) unless the start names another. */
  queue?: string;
  /**
   * In a partitioned queue, the key of a start that names none, read from its input, e.g.
   * `(order: Order) => order.tenantId` (docs/queues.md).
   */
  partitionKey?: (input: never) => string;
}

export interface WorkflowMetadata {
  name: string;
  options: WorkflowOptions;
}

/**
 * Marks a provider class as a workflow type: a fresh instance runs every execution and replay,
 * with its constructor dependencies injected. The name defaults to the class name.
 */
export function Workflow(name?: string, options: WorkflowOptions = {}): ClassDecorator {
  return (target) => {
    const meta: WorkflowMetadata = { name: name === undefined ? target.name : name, options };
    Reflect.defineMetadata(WEFT_WORKFLOW_METADATA, meta, target);
  };
}
