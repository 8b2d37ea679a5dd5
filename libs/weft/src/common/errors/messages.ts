// Signals, updates, queries and streams: the messages a running workflow takes.
import { ErrorCategory, WeftError } from './base.js';
import { describeCause } from './describe-cause.js';

/** A stream entry was written after the stream's close (ctx.closeStream): a closed stream takes no more. */
export class StreamClosedError extends WeftError {
  static readonly code = 'WEFT_STREAM_CLOSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly key: string,
  ) {
    super(`Stream "${key}" of workflow "${workflowId}" is closed; write to another key, or write before ctx.closeStream("${key}").`);
  }
}

export class UpdateTimeoutError extends WeftError {
  static readonly code = 'WEFT_UPDATE_TIMEOUT';
  static readonly category = ErrorCategory.Unavailable;
  static readonly httpStatus = 504;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    readonly timeoutMs: number,
    /**
     * True when the workflow had accepted the update before the caller gave up: its handler goes on
     * in the workflow (nothing is run again); false when the request was withdrawn unapplied.
     */
    readonly accepted = false,
  ) {
    super(
      accepted
        ? `Update "${updateName}" on workflow "${workflowId}" was accepted but did not finish within ${timeoutMs} ms; its handler goes on in the workflow (query it, or wait longer).`
        : `Update "${updateName}" on workflow "${workflowId}" got no result within ${timeoutMs} ms; it will not be applied later.`,
    );
  }
}

/** A validator refused the update: nothing was recorded. `cause`: what the validator threw. */
export class UpdateRejectedError extends WeftError {
  static readonly code = 'WEFT_UPDATE_REJECTED';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 422;
  declare readonly cause: Error;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    cause: Error,
  ) {
    super(
      `Update "${updateName}" on workflow "${workflowId}" was rejected by its validator: ${describeCause(cause)}. Nothing was recorded; fix the arguments.`,
      {
        cause,
      },
    );
  }
}

export class UnknownHandlerError extends WeftError {
  static readonly code = 'WEFT_UNKNOWN_HANDLER';
  static readonly category = ErrorCategory.NotFound;
  constructor(
    readonly workflowType: string,
    readonly handlerKind: 'signal' | 'update' | 'query',
    readonly handlerName: string,
  ) {
    super(`Workflow type "${workflowType}" has no ${handlerKind} handler named "${handlerName}". Check the name, or add the handler.`);
  }
}

/** `cause`: what the update handler threw, as recorded. */
export class UpdateFailedError extends WeftError {
  static readonly code = 'WEFT_UPDATE_FAILED';
  static readonly category = ErrorCategory.Input;
  static readonly httpStatus = 422;
  declare readonly cause: Error;
  constructor(
    readonly workflowId: string,
    readonly updateName: string,
    cause: Error,
  ) {
    super(`Update "${updateName}" on workflow "${workflowId}" failed: ${describeCause(cause)}. The workflow goes on.`, { cause });
  }
}

export class QueryFailedError extends WeftError {
  static readonly code = 'WEFT_QUERY_FAILED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly queryName: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Query "${queryName}" on workflow "${workflowId}" could not be answered: ${detail}`, options);
  }
}
