// Queues the engine was not told of.
import { ErrorCategory, WeftError } from './base.js';

/** A start (or `@Workflow(name, { queue })`) names a queue the engine's `queues` option does not declare. */
export class QueueNotDeclaredError extends WeftError {
  static readonly code = 'WEFT_QUEUE_NOT_DECLARED';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly queue: string,
    readonly declared: string[],
  ) {
    const known = declared.length ? `declared: ${declared.join(', ')}` : 'none is declared';
    super(
      `Queue "${queue}" is not declared (${known}). Add it to the "queues" option of every engine, e.g. queues: { "${queue}": { concurrency: 10 } }.`,
    );
  }
}
