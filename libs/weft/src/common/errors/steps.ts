// A step's attempts: timeouts, heartbeats, completion tokens, giving up.
import { ErrorCategory, WeftError, type RecordedError } from './base.js';
import { describeCause } from './describe-cause.js';

export class StepTimeoutError extends WeftError {
  static readonly code = 'WEFT_STEP_TIMEOUT';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly timeoutMs: number,
  ) {
    super(`Step "${stepName}" attempt exceeded its timeout of ${timeoutMs} ms.`);
  }
}

/** An attempt of a step with `heartbeatTimeout` went that long without a heartbeat: aborted, and retried per the policy. */
export class StepHeartbeatTimeoutError extends WeftError {
  static readonly code = 'WEFT_STEP_HEARTBEAT_TIMEOUT';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly heartbeatTimeoutMs: number,
  ) {
    super(
      `Step "${stepName}" attempt sent no heartbeat for ${heartbeatTimeoutMs} ms (its heartbeatTimeout). Call currentStep().heartbeat() more often, or raise heartbeatTimeout.`,
    );
  }
}

/**
 * engine.completeStep / failStep with a token whose step attempt has its outcome already: completed
 * or failed by an earlier call, recorded, or replaced by a later attempt (that one has its own token).
 */
export class StepAlreadyCompletedError extends WeftError {
  static readonly code = 'WEFT_STEP_ALREADY_COMPLETED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly seq: number,
    readonly attempt: number,
  ) {
    super(
      `The step at seq ${seq} of workflow "${workflowId}" (attempt ${attempt}) already has its outcome, or a later attempt replaced it. ` +
        'A completion token finishes its attempt once; a retried attempt gives its body a new token.',
    );
  }
}

/**
 * A step's attempts ran past `retry.maxElapsed` (counted from its first attempt's start): the
 * attempt running then was aborted, or no retry began after the deadline. `cause`: the last
 * attempt's error, when one failed before.
 */
export class StepMaxElapsedError extends WeftError {
  static readonly code = 'WEFT_STEP_MAX_ELAPSED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly stepName: string,
    readonly maxElapsedMs: number,
    options?: { cause?: unknown },
  ) {
    super(
      `Step "${stepName}" ran out of its retry.maxElapsed of ${maxElapsedMs} ms over all its attempts. Raise retry.maxElapsed, or make the step faster.`,
      options,
    );
  }
}

/**
 * Raised by ctx.step when every attempt failed; `cause` is the last attempt's error as recorded:
 * its name, message, stack, `code` and `details`, on every engine and replay.
 */
export class StepFailedError extends WeftError {
  static readonly code = 'WEFT_STEP_FAILED';
  static readonly category = ErrorCategory.Internal;
  declare readonly cause: RecordedError;
  constructor(
    readonly stepName: string,
    readonly attempts: number,
    cause: RecordedError,
  ) {
    super(`Step "${stepName}" failed after ${attempts} attempt(s): ${describeCause(cause)}`, { cause });
  }
}
