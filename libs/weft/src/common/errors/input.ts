// Arguments, options and payloads refused before anything is written.
import { ErrorCategory, WeftError } from './base.js';

export class InvalidConfigurationError extends WeftError {
  static readonly code = 'WEFT_INVALID_CONFIGURATION';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly option: string,
    detail: string,
  ) {
    super(`Invalid Weft option "${option}": ${detail}`);
  }
}

export class InvalidWorkflowIdError extends WeftError {
  static readonly code = 'WEFT_INVALID_WORKFLOW_ID';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly workflowId: unknown,
    reason: string,
  ) {
    super(`Invalid workflow id: ${reason}. Use 1 to 255 printable characters.`);
  }
}

export class InvalidDurationError extends WeftError {
  static readonly code = 'WEFT_INVALID_DURATION';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly value: unknown,
    readonly option: string,
  ) {
    super(
      `Invalid duration for ${option}: ${JSON.stringify(String(value))}. Use non-negative milliseconds or a string like '500ms', '10s', '5m', '2h', '1d', at most 100 years ('36500d').`,
    );
  }
}

export class InvalidArgumentError extends WeftError {
  static readonly code = 'WEFT_INVALID_ARGUMENT';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly argument: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`Invalid ${argument}: ${detail}`, options);
  }
}

export class PayloadNotSerializableError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_NOT_SERIALIZABLE';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly what: string,
    readonly path: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${what} cannot be stored as JSON at ${path}: ${reason}. Pass plain JSON values (no BigInt, functions, symbols, cycles, NUL characters or lone UTF-16 surrogates; at most 100 levels of nesting).`,
      options,
    );
  }
}

export class PayloadTooLargeError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_TOO_LARGE';
  static readonly category = ErrorCategory.Input;
  constructor(
    readonly what: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(
      `${what} is ${bytes} bytes, over the limit of ${limit} bytes. Store large data elsewhere and pass a reference, or raise maxPayloadBytes.`,
    );
  }
}
