// An engine that cannot take work: disposed, or not ready yet.
import { ErrorCategory, WeftError } from './base.js';

export class EngineDisposedError extends WeftError {
  static readonly code = 'WEFT_ENGINE_DISPOSED';
  static readonly category = ErrorCategory.Unavailable;
  constructor() {
    super('This WeftEngine has been disposed; create a new one.');
  }
}

export class EngineNotReadyError extends WeftError {
  static readonly code = 'WEFT_ENGINE_NOT_READY';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly engineId: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Engine ${engineId} cannot run workflows yet: ${detail}`, options);
  }
}
