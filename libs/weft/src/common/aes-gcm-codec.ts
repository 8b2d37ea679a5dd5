import { createCipheriv, createDecipheriv, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto';
import type { PayloadCodec } from './codec.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const PREFIX_BYTES = 8;
/** The 32-bit invocation counter's values: 0 .. 2^32 - 1. */
const COUNTER_VALUES = 2 ** 32;

/**
 * The 96-bit IVs of one codec instance, NIST SP 800-38D §8.2.1's deterministic construction: a
 * 64-bit fixed field drawn at random when the sequence is made, then a 32-bit counter. Within one
 * prefix no IV comes twice; when the counter has used all its values a new random prefix is drawn
 * (docs/codecs.md: why no IV repeats under one key). Exported for the tests, not from the package.
 */
export class GcmIvSequence {
  private readonly prefix = Buffer.alloc(PREFIX_BYTES);

  /** `counter`: where the counter starts (the tests start near its end). */
  constructor(private counter = 0) {
    if (!Number.isInteger(counter) || counter < 0 || counter >= COUNTER_VALUES)
      throw new RangeError(`GcmIvSequence: bad counter ${counter}`);
    randomFillSync(this.prefix);
  }

  /** Writes the next IV into `out` at `offset` (12 bytes). */
  next(out: Buffer, offset: number): void {
    if (this.counter === COUNTER_VALUES) {
      randomFillSync(this.prefix);
      this.counter = 0;
    }
    this.prefix.copy(out, offset);
    out.writeUInt32BE(this.counter++, offset + PREFIX_BYTES);
  }
}

/**
 * AES-256-GCM from `node:crypto`: a 96-bit IV per payload (a random per-instance prefix and a
 * counter, see GcmIvSequence) and the 128-bit tag, stored as IV ‖ ciphertext ‖ tag. The codec's
 * id names the key, so rotation is a new id with a new key
 * (`codec: { current: new AesGcmCodec('k2', key2), accepts: [new AesGcmCodec('k1', key1)] }`).
 * Decoding reads the IV from the payload, so payloads of any IV construction decode (those stored
 * with a random IV before the counter came too). An example to copy or use as it is; a KMS-backed
 * codec would fetch and cache its data key.
 */
export class AesGcmCodec implements PayloadCodec {
  private readonly key: KeyObject;
  private readonly ivs = new GcmIvSequence();

  /** `key`: 32 bytes, raw or base64. */
  constructor(
    readonly id: string,
    key: Uint8Array | string,
  ) {
    const raw = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key);
    if (raw.length !== 32) throw new RangeError(`AesGcmCodec "${id}": the key must be 32 bytes (got ${raw.length}).`);
    this.key = createSecretKey(raw); // parsed once, not at every payload
    raw.fill(0);
  }

  encode(data: Uint8Array): Uint8Array {
    // One buffer for IV ‖ ciphertext ‖ tag: GCM's ciphertext is as long as the plaintext.
    const out = Buffer.allocUnsafe(IV_BYTES + data.byteLength + TAG_BYTES);
    this.ivs.next(out, 0);
    const cipher = createCipheriv('aes-256-gcm', this.key, out.subarray(0, IV_BYTES));
    let at = IV_BYTES + cipher.update(data).copy(out, IV_BYTES);
    at += cipher.final().copy(out, at);
    // allocUnsafe's memory is not zeroed: every byte must be written (always so for GCM).
    if (at + TAG_BYTES !== out.length)
      throw new Error(`AesGcmCodec "${this.id}": the cipher returned ${at - IV_BYTES} bytes for ${data.byteLength}.`);
    cipher.getAuthTag().copy(out, at);
    return out;
  }

  decode(data: Uint8Array): Uint8Array {
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (buf.length < IV_BYTES + TAG_BYTES) throw new RangeError(`AesGcmCodec "${this.id}": a payload of ${buf.length} bytes is too short.`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, buf.subarray(0, IV_BYTES));
    decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
    const body = decipher.update(buf.subarray(IV_BYTES, buf.length - TAG_BYTES));
    const rest = decipher.final(); // checks the tag; empty for GCM
    return rest.length ? Buffer.concat([body, rest]) : body;
  }
}
