// An interceptor hook that threw.
import { ErrorCategory, WeftError } from './base.js';

/**
 * An interceptor's hook threw (docs/interceptors.md): a `start` hook's throw refuses the start
 * before anything is written; a `signal` hook's, the signal. Errors Weft itself raised inside the
 * chain (a refused start, a payload too large) pass through as they are.
 */
export class InterceptorFailedError extends WeftError {
  static readonly code = 'WEFT_INTERCEPTOR_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly hook: 'start' | 'run' | 'step' | 'signal',
    readonly interceptor: string,
    options: { cause: unknown },
  ) {
    super(
      `Interceptor ${interceptor}'s "${hook}" hook threw: ${(options.cause as Error)?.message ?? String(options.cause)}. Its cause is the hook's error; fix the hook, or throw a Weft error (such as InvalidArgumentError) from it to refuse with that error.`,
      options,
    );
  }
}
