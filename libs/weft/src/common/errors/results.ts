// A workflow's end as its caller (or parent) reads it.
import { ErrorCategory, WeftError, type RecordedError } from './base.js';
import { describeCause } from './describe-cause.js';
import { recordedError } from './recorded.js';

export class ResultTimeoutError extends WeftError {
  static readonly code = 'WEFT_RESULT_TIMEOUT';
  static readonly category = ErrorCategory.Unavailable;
  static readonly httpStatus = 504;
  constructor(
    readonly workflowId: string,
    readonly timeoutMs: number,
  ) {
    super(`Workflow "${workflowId}" did not finish within ${timeoutMs} ms. It is still running; call result() again later.`);
  }
}

/**
 * Raised by result() when the workflow ended in a state other than completed. `cause`: its
 * recorded failure rebuilt (a StepFailedError whose own `cause` is the step's error), or
 * undefined when it ended without one.
 */
export class WorkflowFailedError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError | undefined;
  constructor(
    readonly workflowId: string,
    readonly status: string,
    readonly failure: { name?: string; message?: string } | null,
  ) {
    const cause = failure ? recordedError(failure as Record<string, unknown>) : undefined;
    super(`Workflow "${workflowId}" ended ${status}${failure?.message ? `: ${failure.message}` : ''}.`, { cause });
  }
}

/** `cause`: the child's recorded failure, or undefined when it ended without one (cancelled, say). */
export class ChildWorkflowFailedError extends WeftError {
  static readonly code = 'WEFT_CHILD_WORKFLOW_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError | undefined;
  constructor(
    readonly childWorkflowId: string,
    readonly status: string,
    cause?: Error,
  ) {
    super(`Child workflow "${childWorkflowId}" ended ${status}${cause?.message ? `: ${describeCause(cause)}` : ''}.`, { cause });
  }
}
