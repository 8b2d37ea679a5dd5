// The application's own typed failures (ApplicationError, NonRetryableError), recorded and rebuilt as such.
import { ErrorCategory } from './base.js';

/** What ApplicationError and NonRetryableError take beside their message. */
export interface ApplicationErrorOptions {
  /** The application's own code for the failure (any text; Weft's own codes start with WEFT_). */
  code?: string;
  /** JSON data about the failure, recorded with it (left out above 32 KiB or when JSON cannot hold it). */
  details?: unknown;
  cause?: unknown;
  /** Fails the step at once, whatever its retry policy (NonRetryableError always is). */
  nonRetryable?: boolean;
}

/**
 * A typed failure of the application's own (Temporal's ApplicationFailure): thrown from a step
 * body or workflow code, it is recorded with its name, message, `code` and `details`, and comes
 * back as an ApplicationError (its subclasses' names kept) on every engine and replay, as
 * `StepFailedError.cause` and as `WorkflowFailedError.cause` (docs/concepts.md "Errors").
 */
export class ApplicationError extends Error {
  declare readonly code?: string;
  declare readonly details?: unknown;
  readonly nonRetryable: boolean;
  constructor(message: string, options: ApplicationErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    if (options.code !== undefined) (this as { code?: string }).code = options.code;
    if (options.details !== undefined) (this as { details?: unknown }).details = options.details;
    this.nonRetryable = options.nonRetryable ?? false;
  }

  /** The application's code: whose fault it is is the app's to say; Weft reports it as internal. */
  get category(): ErrorCategory {
    return ErrorCategory.Internal;
  }
}

/** An ApplicationError that fails its step at the first attempt, whatever the step's retry policy. */
export class NonRetryableError extends ApplicationError {
  constructor(message: string, options: Omit<ApplicationErrorOptions, 'nonRetryable'> = {}) {
    super(message, { ...options, nonRetryable: true });
  }
}

/** Is this error one that ends its step's attempts now (a NonRetryableError, or an ApplicationError so marked)? */
export function isNonRetryable(err: unknown): boolean {
  return err instanceof ApplicationError && err.nonRetryable;
}
