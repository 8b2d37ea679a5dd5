// A cancelled workflow, as its code sees it.
import { ErrorCategory, WeftError } from './base.js';

/**
 * Thrown into workflow code at the wait it is at when the workflow is cancelled (engine.cancel):
 * a sleep, a condition, a signal or child wait, a step's await; and at every such call made after
 * the cancel outside ctx.nonCancellable. Rethrown (or left uncaught), the workflow ends
 * `cancelled`; caught, the code goes on and its return value completes it (docs/cancellation.md).
 */
export class WorkflowCancelledError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_CANCELLED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly reason: string,
  ) {
    super(
      `Workflow "${workflowId}" was cancelled: ${reason}. Catch it to clean up (ctx.nonCancellable) and return, or rethrow it to end cancelled.`,
    );
  }
}
