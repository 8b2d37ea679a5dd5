// Payloads (docs/codecs.md) with a synchronous and an asynchronous codec: the same stored form and
// values, a codec's failure as PayloadCodecError with its cause on either path, and the engine's
// command never changed by encoding it.
import { randomBytes } from 'node:crypto';
import { AesGcmCodec } from '../common/aes-gcm-codec.js';
import type { PayloadCodec } from '../common/codec.js';
import { Payloads } from './payloads.js';
import type { AdvanceCommand } from './types.js';

const aes = new AesGcmCodec('k1', randomBytes(32));
const asyncAes: PayloadCodec = { id: 'k1', encode: async (b) => aes.encode(b), decode: async (b) => aes.decode(b) };
const boom = new Error('KMS down');
const throwing: PayloadCodec = {
  id: 'bad',
  encode: () => {
    throw boom;
  },
  decode: () => {
    throw boom;
  },
};
const rejecting: PayloadCodec = { id: 'bad', encode: () => Promise.reject(boom), decode: () => Promise.reject(boom) };

const command = (): AdvanceCommand => ({
  workflowId: 'w1',
  expectedVersion: 3,
  output: { value: { total: 42 } },
  operations: [
    { seq: 1, kind: 'step', name: 'a', result: { secret: 'x' } } as never,
    { seq: 2, kind: 'step', name: 'b', result: undefined } as never,
  ],
  events: [{ key: 'e', value: [1, 2] } as never],
  streams: [{ key: 's', value: 'entry' } as never, { key: 's', close: true } as never],
  consume: [{ id: '7', result: 'answer' } as never, { id: '8' } as never],
});

describe('Payloads (pure logic)', () => {
  it.each([
    ['a synchronous codec', aes],
    ['an asynchronous codec', asyncAes],
  ])('encodes every payload of a command into a copy and decodes them back: %s', async (_, codec) => {
    const p = new Payloads(codec);
    const given = command();
    const before = JSON.stringify(given);
    const out = await p.command(given);
    expect(JSON.stringify(given)).toBe(before); // the engine's command is never changed
    const stored = [out.output!.value, out.operations![0].result, out.events![0].value, out.streams![0].value, out.consume![0].result];
    for (const s of stored) expect(s).toMatchObject({ 'weft:codec': 'k1', data: expect.any(String) });
    expect(out.operations![1].result).toBeUndefined();
    expect(out.streams![1]).toBe(given.streams![1]);
    expect(out.consume![1]).toBe(given.consume![1]);
    expect(await Promise.all(stored.map((s) => p.decode(s)))).toEqual([{ total: 42 }, { secret: 'x' }, [1, 2], 'entry', 'answer']);
    // Either path reads what the other stored: the stored form is the same.
    const other = new Payloads(codec === aes ? asyncAes : aes);
    expect(await other.decode(stored[0])).toEqual({ total: 42 });
    const ops = [{ result: stored[1] }, { result: 'plain' }] as never[];
    expect(await p.history(ops)).toEqual([{ result: { secret: 'x' } }, { result: 'plain' }]);
  });

  it.each([
    ['throws', throwing],
    ['rejects', rejecting],
  ])('a codec that %s gives PayloadCodecError with its cause, on encode and on decode', async (_, codec) => {
    const p = new Payloads(codec);
    await expect(p.encode({ a: 1 })).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_CODEC_FAILED', operation: 'encode', cause: boom });
    await expect(p.command(command())).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_CODEC_FAILED', codecId: 'bad' });
    const stored = { 'weft:codec': 'bad', data: 'AAAA' };
    await expect(p.decode(stored)).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_CODEC_FAILED', operation: 'decode', cause: boom });
    await expect(p.row({ input: stored, output: null })).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_CODEC_FAILED' });
  });

  it('a codec that rejects one payload and throws on the next: the command fails once, no rejection left unhandled', async () => {
    let calls = 0;
    const mixed: PayloadCodec = {
      id: 'mixed',
      encode: (b) => {
        calls++;
        if (calls === 1) return Promise.reject(new Error('first'));
        if (calls === 2) throw new Error('second');
        return aes.encode(b);
      },
      decode: (b) => aes.decode(b),
    };
    await expect(new Payloads(mixed).command(command())).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_CODEC_FAILED' });
    expect(calls).toBeGreaterThanOrEqual(2);
  });

  it('decodes a history with an asynchronous codec one payload at a time (a KMS is not sent a whole history at once)', async () => {
    let inFlight = 0;
    let most = 0;
    const kms: PayloadCodec = {
      id: 'k1',
      encode: (b) => aes.encode(b),
      decode: async (b) => {
        most = Math.max(most, ++inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return aes.decode(b);
      },
    };
    const p = new Payloads(kms);
    const ops = await Promise.all([1, 2, 3, 4, 5].map(async (n) => ({ result: await p.encode({ n }) })));
    expect(await p.history(ops as never[])).toEqual([1, 2, 3, 4, 5].map((n) => ({ result: { n } })));
    expect(most).toBe(1);
  });

  it('without the codec, refuses an encoded payload (or marks it, for the CLI) and passes plain ones', async () => {
    const stored = await new Payloads(aes).encode('secret');
    await expect(new Payloads().decode(stored)).rejects.toMatchObject({ code: 'WEFT_CODEC_MISSING', codecId: 'k1' });
    expect(await new Payloads(undefined, 'mark').decode(stored)).toBe('[encrypted: codec "k1"]');
    const given = command();
    expect(await new Payloads().command(given)).toBe(given);
    expect(await new Payloads(aes).decode({ plain: true })).toEqual({ plain: true });
  });
});
