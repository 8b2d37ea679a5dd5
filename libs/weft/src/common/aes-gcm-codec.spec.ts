// The example AES-256-GCM codec (docs/codecs.md): its counter-based IVs never repeat within an
// instance, a new prefix is drawn when the counter is spent, and payloads stored by the earlier
// random-IV construction still decode.
import { createCipheriv, randomBytes } from 'node:crypto';
import { AesGcmCodec, GcmIvSequence } from './aes-gcm-codec.js';

const text = (s: string) => Buffer.from(s, 'utf8');
const iv = (payload: Uint8Array) => Buffer.from(payload.subarray(0, 12)).toString('hex');

/** A payload as the codec stored it before the counter IV: a random IV per payload (commit ed05385). */
function encodedWithRandomIv(key: Buffer, data: Buffer): Buffer {
  const nonce = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  const body = Buffer.concat([cipher.update(data), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

describe('AesGcmCodec (pure logic)', () => {
  const key = randomBytes(32);

  it('round-trips empty, small and large payloads (past the 4 KiB of Buffer pool slices)', () => {
    const codec = new AesGcmCodec('k', key);
    for (const data of [Buffer.alloc(0), text('{"n":42}'), randomBytes(100_000)]) {
      const out = codec.encode(data);
      expect(out.byteLength).toBe(12 + data.length + 16);
      expect(Buffer.from(codec.decode(out)).equals(data)).toBe(true);
    }
  });

  it('accepts the key as base64 and refuses one that is not 32 bytes', () => {
    const a = new AesGcmCodec('k', key);
    expect(Buffer.from(new AesGcmCodec('k', key.toString('base64')).decode(a.encode(text('x')))).toString()).toBe('x');
    expect(() => new AesGcmCodec('k', randomBytes(16))).toThrow(RangeError);
  });

  it('never repeats an IV over many encodes: one prefix per instance, a counter counting up from 0', () => {
    const codec = new AesGcmCodec('k', key);
    const n = 100_000;
    const ivs = new Set<string>();
    let prefix = '';
    for (let i = 0; i < n; i++) {
      const v = iv(codec.encode(text('x')));
      ivs.add(v);
      prefix ||= v.slice(0, 16);
      expect(v).toBe(`${prefix}${i.toString(16).padStart(8, '0')}`);
    }
    expect(ivs.size).toBe(n);
    // Another instance of the same key (another engine, or this one after a restart) has its own prefix.
    expect(iv(new AesGcmCodec('k', key).encode(text('x'))).slice(0, 16)).not.toBe(prefix);
  });

  it('draws a new random prefix when the 32-bit counter is spent, and starts the counter again', () => {
    const seq = new GcmIvSequence(2 ** 32 - 2);
    const out = Buffer.alloc(12 * 3);
    for (let i = 0; i < 3; i++) seq.next(out, i * 12);
    const [a, b, c] = [0, 1, 2].map((i) => out.subarray(i * 12, i * 12 + 12).toString('hex'));
    expect(a.slice(16)).toBe('fffffffe');
    expect(b.slice(16)).toBe('ffffffff');
    expect(b.slice(0, 16)).toBe(a.slice(0, 16));
    expect(c.slice(16)).toBe('00000000');
    expect(c.slice(0, 16)).not.toBe(a.slice(0, 16)); // a counter of 0 again, under a new prefix
    expect(() => new GcmIvSequence(2 ** 32)).toThrow(RangeError);
  });

  it('decodes payloads stored with a random IV (the earlier construction), and refuses a tampered one', () => {
    const codec = new AesGcmCodec('k', key);
    const old = encodedWithRandomIv(key, text('{"secret":"old"}'));
    expect(Buffer.from(codec.decode(old)).toString()).toBe('{"secret":"old"}');
    old[20] ^= 1;
    expect(() => codec.decode(old)).toThrow();
    expect(() => codec.decode(new Uint8Array(27))).toThrow(RangeError);
  });
});
