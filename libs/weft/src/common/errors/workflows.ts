// Starting, finding and purging workflows, and calling ctx where it cannot be.
import { ErrorCategory, WeftError } from './base.js';

export class WorkflowNotFoundError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly workflowId: string) {
    super(`No workflow with id "${workflowId}". Check the id, or start it first.`);
  }
}

export class WorkflowTypeNotRegisteredError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_TYPE_NOT_REGISTERED';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly workflowType: string) {
    super(
      `Workflow type "${workflowType}" is not registered on this engine. Register the class (or decorate it with @Workflow) before starting it.`,
    );
  }
}

export class SingletonConflictError extends WeftError {
  static readonly code = 'WEFT_SINGLETON_CONFLICT';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly key: string,
    readonly workflowId: string,
  ) {
    super(
      `Workflow "${workflowId}" is already live under singleton key "${key}" and onConflict is 'reject'. ` +
        "Wait for it to end, or use onConflict 'return-existing' to get its handle.",
    );
  }
}

export class WorkflowAlreadyStartedError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_ALREADY_STARTED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly status: string,
  ) {
    super(
      `Workflow "${workflowId}" already exists (status ${status}) and idPolicy is 'reject-duplicate'. Use another id or idPolicy 'return-existing'.`,
    );
  }
}

/** The workflow is not in the status the operation needs (`running`, or `suspended` for resume()). */
export class WorkflowNotRunningError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_NOT_RUNNING';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly status: string,
    // A literal: types.ts imports durations, which import this file.
    readonly expectedStatus: string = 'running',
  ) {
    super(`Workflow "${workflowId}" is ${status}; this operation needs it to be ${expectedStatus}.`);
  }
}

export class OutsideWorkflowError extends WeftError {
  static readonly code = 'WEFT_OUTSIDE_WORKFLOW';
  static readonly category = ErrorCategory.Internal;
  constructor(readonly method: string) {
    super(`ctx.${method}() was called outside a running workflow. Only call ctx methods from inside run() while it is executing.`);
  }
}

/** purge() of a workflow that has not ended, or whose parent or children still run. */
export class WorkflowPurgeRefusedError extends WeftError {
  static readonly code = 'WEFT_PURGE_REFUSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly reason: 'live' | 'live-children' | 'live-parent',
    readonly status: string,
  ) {
    const why = {
      live: `it has not ended (status "${status}"); cancel it first`,
      'live-children': 'children of it still run; purge it once they have ended',
      'live-parent': 'its parent still runs and will read its end; purge it once the parent has ended',
    }[reason];
    super(`Workflow "${workflowId}" was not purged: ${why}.`);
  }
}
