// Payload codecs: one missing, one that threw.
import { ErrorCategory, WeftError } from './base.js';

/**
 * A stored payload was encoded by a codec this engine was not given: it is never returned as
 * what is stored (ciphertext), and a run that needs it is not replayed here.
 */
export class CodecMissingError extends WeftError {
  static readonly code = 'WEFT_CODEC_MISSING';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly codecId: string,
    readonly known: string[],
  ) {
    const have = known.length ? `this engine has ${known.map((k) => `"${k}"`).join(', ')}` : 'this engine has no codec';
    super(
      `A stored payload was encoded by codec "${codecId}", and ${have}. Give every engine (and the CLI) that codec, as "codec" or in "codec.accepts" after a key rotation.`,
    );
  }
}

/** The codec threw while encoding or decoding a payload (a wrong key, a tampered or truncated payload, its KMS down). */
export class PayloadCodecError extends WeftError {
  static readonly code = 'WEFT_PAYLOAD_CODEC_FAILED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly codecId: string,
    readonly operation: 'encode' | 'decode',
    options: { cause: unknown },
  ) {
    super(
      `Codec "${codecId}" failed to ${operation} a payload: ${(options.cause as Error)?.message ?? String(options.cause)}. Check its key (a payload encoded with another key under the same id cannot be decoded) and its dependencies.`,
      options,
    );
  }
}
