// The payload codec (docs/codecs.md) on a real PostgreSQL: no payload is stored in the clear,
// every public read gives the plain value, old keys stay readable after a rotation, and an engine
// without the codec refuses with a typed error.
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { AesGcmCodec } from '../common/aes-gcm-codec.js';
import type { CodecOption, PayloadCodec } from '../common/codec.js';
import type { WeftInterceptor } from '../common/interceptors.js';
import type { StepArgs, WorkflowContext, WorkflowDefinition } from '../common/types.js';
import { currentStep } from '../nest/step-scope.js';
import type { WeftEngine } from './engine.js';
import { WorkflowReplayer } from './replayer.js';

const M = (what: string) => `MARKER-${what}-7f3a`;

/** Every kind of payload: input, step results, a signal, an update, an event, streams, a child, a continue-as-new, the output. */
class Everything {
  private got: string[] = [];
  onAdd(p: { text: string }) {
    this.got.push(p.text);
  }
  bump(p: { text: string }) {
    this.got.push(p.text);
    return { echo: M('update-result') };
  }
  /** An async handler (its request and its answer on the request row), reached with updateWithStart. */
  async bumpLater(p: { text: string }) {
    const inner = await (this as unknown as { ctx: WorkflowContext }).ctx.step('in-update', () => M('update-step-result'));
    return { echo: `${p.text}+${inner}+${M('async-update-result')}` };
  }
  async run(ctx: WorkflowContext, input: { text: string; continued?: boolean }) {
    if (!input.continued) {
      await ctx.step('before', () => M('step-before-continue'));
      return ctx.continueAsNew({ text: M('continued-input'), continued: true });
    }
    const a = await ctx.step('a', () => ({ secret: M('step-result') }));
    await ctx.transaction('tx', async (manager) => {
      await manager.query('SELECT 1');
      return { secret: M('transaction-result') };
    });
    await ctx.step('body-stream', async () => {
      await ctx.writeStream('s', M('step-stream-entry'));
      return 1;
    });
    await ctx.writeStream('s', M('wf-stream-entry'));
    await ctx.setEvent('e', { secret: M('event') });
    const child = await ctx.executeChild<string>('codec-child', { text: M('child-input') });
    await ctx.condition(() => this.got.length >= 2, { timeout: '30s' });
    return { a, child, got: this.got, input: input.text, out: M('output') };
  }
}

class Child {
  async run(ctx: WorkflowContext, input: { text: string }) {
    return ctx.step('c', () => `${input.text}+${M('child-output')}`);
  }
}

/** Waits for a signal, then returns it: a history that spans a key rotation. */
class Waiter {
  async run(ctx: WorkflowContext, input: { text: string }) {
    const first = await ctx.step('first', () => `${input.text}/${M('before-rotation')}`);
    const sig = await ctx.waitForSignal<{ text: string }>('go', { timeout: '60s' });
    const second = await ctx.step('second', () => M('after-rotation'));
    return { first, sig, second };
  }
}

const tokens: string[] = [];

/** A step that heartbeats its progress, then waits to be completed from outside. */
class LongStep {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'ext',
      ({ completionToken }: StepArgs) => {
        currentStep()?.heartbeat({ cursor: M('heartbeat') });
        tokens.push(completionToken!);
        return 'ignored';
      },
      { complete: 'external', timeout: '30s' },
    );
  }
}

const defs: WorkflowDefinition[] = [
  {
    name: 'codec-all',
    factory: () => new Everything() as never,
    signalHandlers: { add: 'onAdd' },
    updateHandlers: { bump: 'bump', later: 'bumpLater' },
  },
  { name: 'codec-child', factory: () => new Child() as never },
  { name: 'codec-waiter', factory: () => new Waiter() as never },
  { name: 'codec-long', factory: () => new LongStep() as never },
];
const register = (e: WeftEngine) => defs.forEach((d) => e.register(d));

/** Headers are a payload too: every start stores one with a marker (children inherit it). */
const stampHeader: WeftInterceptor = {
  start: (input, next) => next({ ...input, headers: { ...input.headers, tenant: M('header') } }),
};

const key1 = new AesGcmCodec('k1', randomBytes(32));
const key2 = new AesGcmCodec('k2', randomBytes(32));
/** key1 behind promises, answered a macrotask later: Payloads' path for a codec that awaits (a KMS). */
const later = <T>(f: () => T) =>
  new Promise<T>((resolve, reject) =>
    setImmediate(() => {
      try {
        resolve(f());
      } catch (err) {
        reject(err as Error);
      }
    }),
  );
const asyncKey1: PayloadCodec = {
  id: 'k1',
  encode: (b) => later(() => key1.encode(b)),
  decode: (b) => later(() => key1.decode(b)),
};

describe('payload codec (real PostgreSQL)', () => {
  const env = useTestEngines();

  /** Every text, json and jsonb column of every Weft table, as text, with where it came from. */
  async function rawScan(): Promise<Array<{ where: string; text: string }>> {
    const cols = await env.tdb.query<{ table_name: string; column_name: string }>(
      `SELECT table_name, column_name FROM information_schema.columns
       WHERE table_schema = 'weft' AND data_type IN ('text', 'json', 'jsonb', 'character varying')`,
    );
    expect(cols.length).toBeGreaterThan(10);
    const out: Array<{ where: string; text: string }> = [];
    for (const c of cols) {
      const rows = await env.tdb.query<{ v: string | null }>(`SELECT "${c.column_name}"::text AS v FROM weft."${c.table_name}"`);
      for (const r of rows) if (r.v) out.push({ where: `${c.table_name}.${c.column_name}`, text: r.v });
    }
    return out;
  }

  const engines = (codec: CodecOption | undefined, n: number) =>
    Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const e = await env.pool.create(
          {
            ownership: 'workflow-lease',
            engineId: `codec-${i}-${Math.random()}`,
            interceptors: [stampHeader],
            ...(codec ? { codec } : {}),
          },
          register,
        );
        await e.bootstrap();
        return e;
      }),
    );

  it.each([
    ['a synchronous codec (AesGcmCodec)', key1, 'all-1'],
    ['an asynchronous codec (the shape of a KMS client)', asyncKey1, 'all-2'],
  ])('stores no payload in the clear, on two engines, while every public read gives the plain value: %s', async (_, codec, workflowId) => {
    const [a, b] = await engines(codec, 2);
    // The NOTIFY payloads too: an event's carries its value as stored (storage/talk-notice.ts).
    const listener = new Client({ connectionString: env.tdb.url });
    await listener.connect();
    const notices: string[] = [];
    listener.on('notification', (n) => n.payload && notices.push(n.payload));
    await listener.query('LISTEN "weft_weft"');
    const h = await a.start('codec-all', { text: M('input') }, { workflowId });
    await waitFor(async () => (await b.describe(h.workflowId)).history.some((o) => o.name === 'e'), 'the event set');
    await b.signal(h.workflowId, 'add', { text: M('signal') });
    // Found by its id (return-existing): the request's arguments and the async handler's answer.
    await expect(
      b.updateWithStart(
        'codec-all',
        { text: M('unused-input') },
        { workflowId: h.workflowId },
        'later',
        { text: M('uws-args') },
        { timeout: '20s' },
      ),
    ).resolves.toEqual({ echo: `${M('uws-args')}+${M('update-step-result')}+${M('async-update-result')}` });
    await expect(b.update(h.workflowId, 'bump', { text: M('update-args') }, { timeout: '20s' })).resolves.toEqual({
      echo: M('update-result'),
    });
    const out = await b.handle(h.workflowId).result({ timeout: '20s' });
    expect(out).toEqual({
      a: { secret: M('step-result') },
      child: `${M('child-input')}+${M('child-output')}`,
      got: [M('signal'), M('update-args')],
      input: M('continued-input'),
      out: M('output'),
    });
    // Public reads: describe, getEvent, readStream, list with input and output.
    const d = await a.describe(h.workflowId);
    expect(d.input).toEqual({ text: M('continued-input'), continued: true });
    expect(d.output).toEqual(out);
    expect(d.history.find((o) => o.name === 'a')?.result).toEqual({ secret: M('step-result') });
    expect(await b.getEvent(h.workflowId, 'e')).toEqual({ secret: M('event') });
    const entries: unknown[] = [];
    for await (const entry of a.readStream(h.workflowId, 's')) entries.push(entry.value);
    expect(entries).toEqual([M('step-stream-entry'), M('wf-stream-entry')]);
    const page = await a.list({ type: 'codec-child', include: ['input', 'output'] });
    expect(page.items[0]).toMatchObject({ input: { text: M('child-input') }, output: `${M('child-input')}+${M('child-output')}` });
    // The replayer reads the same history and finds it deterministic.
    const report = await new WorkflowReplayer(defs).replay({ ...d, type: 'codec-all' });
    expect(report, JSON.stringify(report)).toMatchObject({ ok: true });
    // The async update's answer was written on its request row (updateResults), encoded.
    const answers = await env.tdb.query<{ status: string; id: string }>(
      `SELECT status, result->>'weft:codec' AS id FROM weft.weft_messages WHERE workflow_id = $1 AND kind = 'update' ORDER BY id`,
      [h.workflowId],
    );
    expect(answers).toEqual([
      { status: 'done', id: 'k1' },
      { status: 'done', id: 'k1' },
    ]);
    // Nothing of any payload is in the clear, anywhere.
    const raw = await rawScan();
    expect(raw.filter((r) => r.text.includes('MARKER-'))).toEqual([]);
    expect(raw.some((r) => r.text.includes('"weft:codec":"k1"') || r.text.includes('"weft:codec": "k1"'))).toBe(true);
    await listener.end();
    expect(notices.filter((n) => n.includes('MARKER-'))).toEqual([]);
    expect(notices.some((n) => n.startsWith(`\u0002${workflowId}\u0001`) && n.includes('"weft:codec":"k1"'))).toBe(true);
  });

  it('reads old histories after a rotation from key 1 to key 2, and writes new payloads with key 2', async () => {
    const [old] = await engines(key1, 1);
    const h = await old.start('codec-waiter', { text: M('w-input') }, { workflowId: 'rot-1' });
    await waitFor(async () => (await old.describe(h.workflowId)).history.some((o) => o.name === 'first'), 'first step recorded');
    await old.dispose();
    const [rotated] = await engines({ current: key2, accepts: [key1] }, 1);
    await rotated.signal(h.workflowId, 'go', { text: M('w-signal') });
    await expect(rotated.handle(h.workflowId).result({ timeout: '20s' })).resolves.toEqual({
      first: `${M('w-input')}/${M('before-rotation')}`,
      sig: { text: M('w-signal') },
      second: M('after-rotation'),
    });
    const ids = await env.tdb.query<{ name: string; id: string }>(
      `SELECT name, result->>'weft:codec' AS id FROM weft.weft_operations WHERE workflow_id = $1 AND kind = 'step' ORDER BY seq`,
      [h.workflowId],
    );
    expect(ids).toEqual([
      { name: 'first', id: 'k1' },
      { name: 'second', id: 'k2' },
    ]);
    const [output] = await env.tdb.query<{ id: string }>(`SELECT output->>'weft:codec' AS id FROM weft.weft_workflows WHERE id = $1`, [
      h.workflowId,
    ]);
    expect(output.id).toBe('k2');
  });

  it('reads payloads stored before the counter IV (random IVs, as of ed05385), in a row and in a history', async () => {
    // Stored by that version's AesGcmCodec('k-old', 32 bytes of 7) through Payloads, byte for byte.
    const keyOld = new AesGcmCodec('k-old', Buffer.alloc(32, 7));
    const storedOld = {
      'weft:codec': 'k-old',
      data: 'WAs6OdKhZiMxtbk7WnE4AFw3oMqvmI3DKt/Hcp/YFBGqifQlMlbWVOX7SMNFjtfTktaqivPb9cgFzJ5UhIFcVlOGsFo0WK4=',
    };
    const plain = { secret: 'MARKER-golden-7f3a', n: [1, 2, 3] };
    const [e] = await engines({ current: key1, accepts: [keyOld] }, 1);
    const h = await e.start('codec-child', { text: M('golden') }, { workflowId: 'old-format-1' });
    await h.result({ timeout: '20s' });
    await env.tdb.query(`UPDATE weft.weft_workflows SET input = $2 WHERE id = $1`, [h.workflowId, storedOld]);
    await env.tdb.query(`UPDATE weft.weft_operations SET result = $2 WHERE workflow_id = $1 AND name = 'c'`, [h.workflowId, storedOld]);
    const d = await e.describe(h.workflowId);
    expect(d.input).toEqual(plain);
    expect(d.history.find((o) => o.name === 'c')?.result).toEqual(plain);
  });

  it('an engine without the codec refuses with CodecMissingError, never returning what is stored', async () => {
    const [withKey] = await engines(key1, 1);
    const h = await withKey.start('codec-child', { text: M('x') }, { workflowId: 'plain-reader-1' });
    await h.result({ timeout: '20s' });
    await withKey.dispose();
    const [none] = await engines(undefined, 1);
    await expect(none.describe(h.workflowId)).rejects.toMatchObject({ code: 'WEFT_CODEC_MISSING', codecId: 'k1' });
    await expect(none.handle(h.workflowId).result({ timeout: '5s' })).rejects.toMatchObject({ code: 'WEFT_CODEC_MISSING' });
    const [other] = await engines(key2, 1);
    await expect(other.describe(h.workflowId)).rejects.toMatchObject({ code: 'WEFT_CODEC_MISSING', codecId: 'k1', known: ['k2'] });
  });

  it('encodes the inputs of debounced and queued singleton starts', async () => {
    const [e] = await engines(key1, 1);
    const d = await e.start('codec-child', { text: M('debounced') }, { debounce: { key: 'd1', delay: '50ms' } });
    const s1 = await e.start('codec-child', { text: M('single-1') }, { singleton: { key: 's1', onConflict: 'queue' } });
    const s2 = await e.start('codec-child', { text: M('single-2') }, { singleton: { key: 's1', onConflict: 'queue' } });
    for (const h of [d, s1, s2]) await h.result({ timeout: '20s' });
    expect(await s2.result()).toBe(`${M('single-2')}+${M('child-output')}`);
    expect((await rawScan()).filter((r) => r.text.includes('MARKER-'))).toEqual([]);
  });

  it.each([
    ['a synchronous codec', key1, 'sync'],
    ['an asynchronous codec (its runs are loaded)', asyncKey1, 'async'],
  ])(
    'a queued run gets its input and the messages sent meanwhile decoded, admitted by a pass or handed a slot: %s',
    async (_, codec, tag) => {
      const e = await env.pool.create({ codec, queues: { one: { concurrency: 1 } } }, register);
      await e.bootstrap();
      const hs = await Promise.all(
        [1, 2, 3].map((n) => e.start('codec-waiter', { text: M(`queued-${n}`) }, { workflowId: `${tag}-queued-${n}`, queue: 'one' })),
      );
      // Sent while the later ones wait in the queue: their admission hands the messages over with the input.
      for (const [i, h] of hs.entries()) await h.signal('go', { text: M(`signal-${i + 1}`) });
      for (const [i, h] of hs.entries())
        expect(await h.result({ timeout: '20s' })).toEqual({
          first: `${M(`queued-${i + 1}`)}/${M('before-rotation')}`,
          sig: { text: M(`signal-${i + 1}`) },
          second: M('after-rotation'),
        });
    },
  );

  it("an asynchronous codec decodes an admitted run's input once: the admission stops trying it at once after its first promise", async () => {
    // Counts the decodes of each queued input: an admission that tried the codec at once, got a
    // promise and left the run to its load (which decodes again) decoded every input twice.
    const decodes = new Map<string, number>();
    const counting: PayloadCodec = {
      id: 'k1',
      encode: (b) => later(() => key1.encode(b)),
      decode: (b) =>
        later(() => {
          const out = key1.decode(b);
          const text = (JSON.parse(Buffer.from(out).toString('utf8')) as { text?: unknown } | null)?.text;
          if (typeof text === 'string') decodes.set(text, (decodes.get(text) ?? 0) + 1);
          return out;
        }),
    };
    const e = await env.pool.create({ codec: counting, queues: { one: { concurrency: 1 } } }, register);
    await e.bootstrap();
    const ns = [1, 2, 3, 4];
    const hs = await Promise.all(
      ns.map((n) => e.start('codec-child', { text: M(`counted-${n}`) }, { workflowId: `counted-${n}`, queue: 'one' })),
    );
    // Ended, seen in the table (a handle's result or describe reads the row, input included: a decode of their own).
    await waitFor(
      async () =>
        (
          await env.tdb.query<{ n: number }>(
            `SELECT count(*)::int AS n FROM weft.weft_workflows WHERE id LIKE 'counted-%' AND status = 'completed'`,
          )
        )[0].n === ns.length,
      'the queued runs completed',
      20_000,
    );
    const counts = ns.map((n) => decodes.get(M(`counted-${n}`)) ?? 0);
    // The first admission learns that the codec answers later (one decode for nothing), no other
    // (fewer when a run was not launched from its admission: a reclaim scan's load decodes once).
    expect(counts.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(ns.length + 1);
    expect(counts.every((c) => c >= 1 && c <= 2)).toBe(true);
    for (const [i, h] of hs.entries()) expect(await h.result({ timeout: '20s' })).toBe(`${M(`counted-${ns[i]}`)}+${M('child-output')}`);
  });

  it('encodes heartbeat details and external completions', async () => {
    const [runner, other] = await engines(key1, 2);
    const h = await runner.start('codec-long', {}, { workflowId: 'long-1' });
    await waitFor(() => tokens.length === 1, 'the completion token');
    await waitFor(
      async () =>
        (await env.tdb.query(`SELECT 1 FROM weft.weft_step_progress WHERE workflow_id = $1 AND has_details`, [h.workflowId])).length === 1,
      'the heartbeat flushed',
    );
    expect((await rawScan()).filter((r) => r.text.includes('MARKER-'))).toEqual([]);
    await other.completeStep(tokens[0], { by: M('external-result') });
    await expect(h.result({ timeout: '20s' })).resolves.toEqual({ by: M('external-result') });
    expect((await rawScan()).filter((r) => r.text.includes('MARKER-'))).toEqual([]);
  });

  it('refuses a bad codec option at start-up', async () => {
    await expect(env.pool.create({ codec: { current: key1, accepts: [new AesGcmCodec('k1', randomBytes(32))] } })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
    });
    await expect(env.pool.create({ codec: { id: '', encode: (b: Uint8Array) => b, decode: (b: Uint8Array) => b } })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
    });
  });
});
