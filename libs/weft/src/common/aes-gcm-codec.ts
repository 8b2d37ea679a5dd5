import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { PayloadCodec } from './codec.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM from `node:crypto`: a random 96-bit IV per payload and the 128-bit tag, stored as
 * IV ‖ ciphertext ‖ tag. The codec's id names the key, so rotation is a new id with a new key
 * (`codec: { current: new AesGcmCodec('k2', key2), accepts: [new AesGcmCodec('k1', key1)] }`).
 * An example to copy or use as it is; a KMS-backed codec would fetch and cache its data key.
 */
export class AesGcmCodec implements PayloadCodec {
  private readonly key: Buffer;

  /** `key`: 32 bytes, raw or base64. */
  constructor(
    readonly id: string,
    key: Uint8Array | string,
  ) {
    this.key = typeof key === 'string' ? Buffer.from(key, 'base64') : Buffer.from(key);
    if (this.key.length !== 32) throw new RangeError(`AesGcmCodec "${id}": the key must be 32 bytes (got ${this.key.length}).`);
  }

  encode(data: Uint8Array): Uint8Array {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(data), cipher.final()]);
    return Buffer.concat([iv, body, cipher.getAuthTag()]);
  }

  decode(data: Uint8Array): Uint8Array {
    const buf = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
    if (buf.length < IV_BYTES + TAG_BYTES) throw new RangeError(`AesGcmCodec "${this.id}": a payload of ${buf.length} bytes is too short.`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, buf.subarray(0, IV_BYTES));
    decipher.setAuthTag(buf.subarray(buf.length - TAG_BYTES));
    return Buffer.concat([decipher.update(buf.subarray(IV_BYTES, buf.length - TAG_BYTES)), decipher.final()]);
  }
}
