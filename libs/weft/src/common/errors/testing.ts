// The testing kit's clock.
import { ErrorCategory, WeftError } from './base.js';

/**
 * The testing kit's clock (`env.clock.advance`) could not finish: runs it woke were still busy
 * after `settleTimeout` of real time, or time kept having something due past its bound of steps.
 */
export class TestClockStuckError extends WeftError {
  static readonly code = 'WEFT_TEST_CLOCK_STUCK';
  static readonly category = ErrorCategory.Unavailable;
  constructor(detail: string) {
    super(`The test clock could not advance: ${detail}`);
  }
}
