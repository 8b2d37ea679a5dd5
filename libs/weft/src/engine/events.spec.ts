// ctx.setEvent and engine.getEvent (docs/events-and-streams.md), on a real PostgreSQL.
import { Client } from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { InvalidArgumentError, PayloadNotSerializableError, PayloadTooLargeError, WorkflowNotFoundError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import { NOTICE_VALUE_BYTES } from '../storage/talk-notice.js';
import type { WeftEngine } from './engine.js';

/** Publishes 'stage' after a step, then, once told to go, 'stage' again and 'done'. */
class Publisher {
  async run(ctx: WorkflowContext) {
    await ctx.step('work', () => 1);
    await ctx.setEvent('stage', { at: 'first' });
    await ctx.waitForSignal('go');
    await ctx.setEvent('stage', { at: 'second' });
    await ctx.setEvent('done', true);
    return 'ok';
  }
}

/** Publishes 'once' a single time, then 'done' once told to go. */
class Once {
  async run(ctx: WorkflowContext) {
    await ctx.step('work', () => 1);
    await ctx.setEvent('once', 1);
    await ctx.waitForSignal('go');
    await ctx.setEvent('done', true);
    return 'ok';
  }
}

/** Run 1 publishes 'first' and continues; run 2 publishes 'second'. */
class Chain {
  async run(ctx: WorkflowContext, input: { second?: boolean }) {
    if (input.second) {
      await ctx.setEvent('second', 2);
      return ctx.step('second', () => 'ok');
    }
    await ctx.setEvent('first', 1);
    await ctx.step('first', () => 'ok');
    return ctx.continueAsNew({ second: true });
  }
}

/** Once told to go, sets a short event and one too long for a notice (storage/talk-notice.ts) in one commit. */
class Sizes {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
    await ctx.setEvent('short', { n: 1, s: 'é\u0001"' });
    await ctx.setEvent('long', 'x'.repeat(NOTICE_VALUE_BYTES + 10));
    await ctx.setEvent('k\u0001e\u0001y', ['a\u0001']); // the notice's separator in a key and a value
    return 'ok';
  }
}

/** Sets 'latest' and a key of its own, and writes its tag to stream 'log'. */
class Restarted {
  async run(ctx: WorkflowContext, input: { tag: string }) {
    await ctx.setEvent('latest', input.tag);
    await ctx.setEvent(input.tag, true);
    await ctx.writeStream('log', input.tag);
    return ctx.step('done', () => input.tag);
  }
}

/** Every refused call writes nothing: the codes it got, then one that passes. */
class Refused {
  async run(ctx: WorkflowContext) {
    const codes: string[] = [];
    const attempt = (key: string, value: unknown) => {
      try {
        void ctx.setEvent(key, value);
      } catch (err) {
        codes.push((err as { code?: string }).code ?? String(err));
      }
    };
    attempt('k', 'a\u0000b');
    attempt('k', { deep: '\ud800' });
    attempt('k', 'x'.repeat(9000));
    attempt('', 1);
    attempt('k'.repeat(256), 1);
    attempt('k', () => 1);
    await ctx.setEvent('ok', 1);
    return ctx.step('after', () => codes);
  }
}

describe('ctx.setEvent and engine.getEvent (real PostgreSQL)', () => {
  const env = useTestEngines();

  const engine = async () => {
    const e = await env.pool.create({ maxPayloadBytes: 8192 }, (x: WeftEngine) =>
      x
        .register('publisher', Publisher)
        .register('chain', Chain)
        .register('refused', Refused)
        .register('once', Once)
        .register('restarted', Restarted)
        .register('sizes', Sizes),
    );
    await e.bootstrap();
    return e;
  };
  const eventRows = (id: string) =>
    env.tdb.query<{ key: string; value: unknown }>('SELECT key, value FROM weft.weft_events WHERE workflow_id = $1 ORDER BY key', [id]);

  it('same engine: a waiting getEvent gets the value once the commit lands; describe shows the events', async () => {
    const e = await engine();
    const h = await e.start('publisher', {}, { workflowId: 'pub-1' });
    expect(await e.getEvent(h.workflowId, 'stage', { timeout: '10s' })).toEqual({ at: 'first' });
    const done = e.getEvent(h.workflowId, 'done', { timeout: '10s' }); // waits: not set yet
    await h.signal('go');
    expect(await done).toBe(true);
    expect(await e.getEvent(h.workflowId, 'stage')).toEqual({ at: 'second' });
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
    const d = await e.describe(h.workflowId);
    expect(d.events.map((x) => [x.key, x.value])).toEqual([
      ['done', true],
      ['stage', { at: 'second' }],
    ]);
    expect(d.history.filter((o) => o.kind === 'setEvent').map((o) => o.name)).toEqual(['stage', 'stage', 'done']);
  });

  it('another engine: its getEvent is woken by the NOTIFY sent in the statement that writes the event', async () => {
    const a = await engine();
    const b = await engine();
    const listener = new Client({ connectionString: env.tdb.url });
    await listener.connect();
    const heard: string[] = [];
    listener.on('notification', (n) => n.payload && heard.push(n.payload));
    await listener.query('LISTEN "weft_weft"');
    try {
      const h = await a.start('publisher', {}, { workflowId: 'pub-2' });
      await b.getEvent(h.workflowId, 'stage', { timeout: '10s' });
      const done = b.getEvent(h.workflowId, 'done', { timeout: '10s' });
      await a.signal(h.workflowId, 'go');
      expect(await done).toBe(true);
      // Each carries the value as stored (storage/talk-notice.ts): the waiters need no read.
      await waitFor(() => heard.includes('\u0002pub-2\u0001true\u0001done'), 'the notification of the event');
      expect(heard).toContain('\u0002pub-2\u0001{"at":"first"}\u0001stage');
    } finally {
      await listener.end();
    }
  });

  it('a waiting getEvent takes the value its notice carries, with no read; a value too long for a notice is read', async () => {
    const a = await engine();
    const b = await engine();
    // After their first reads, b's reads of every key but 'long' find nothing: only the notices can give them.
    let reads = 0;
    let blind = false;
    const get = b.store.events.get.bind(b.store.events);
    b.store.events.get = async (id: string, key: string) => {
      const row = await get(id, key);
      // Counted once answered: a first read still in flight when 'go' goes could run after the
      // workflow's end under load, and its blinded answer would then say "ended without it".
      reads++;
      return blind && key !== 'long' && row ? { ...row, found: false, value: null } : row;
    };
    const h = await a.start('sizes', {}, { workflowId: 'sizes-1' });
    const short = b.getEvent(h.workflowId, 'short', { timeout: '5s' });
    const long = b.getEvent(h.workflowId, 'long', { timeout: '10s' });
    const odd = b.getEvent(h.workflowId, 'k\u0001e\u0001y', { timeout: '10s' });
    await waitFor(() => reads >= 3, 'all three waiting after their first read');
    blind = true;
    await h.signal('go');
    expect(await short).toEqual({ n: 1, s: 'é\u0001"' });
    expect(await long).toBe('x'.repeat(NOTICE_VALUE_BYTES + 10));
    expect(await odd).toEqual(['a\u0001']);
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
  });

  it('null on timeout, null at once when the workflow ended without it, and not-found for no workflow', async () => {
    const e = await engine();
    const h = await e.start('publisher', {}, { workflowId: 'pub-3' });
    await e.getEvent(h.workflowId, 'stage', { timeout: '10s' });
    expect(await e.getEvent(h.workflowId, 'done', { timeout: 150 })).toBeNull();
    await h.cancel();
    const t0 = Date.now();
    expect(await e.getEvent(h.workflowId, 'done', { timeout: '1h' })).toBeNull();
    expect(Date.now() - t0).toBeLessThan(60_000); // not the hour: the ended workflow answers at once
    await expect(e.getEvent('no-such', 'x', { timeout: 10 })).rejects.toBeInstanceOf(WorkflowNotFoundError);
    await expect(e.getEvent(h.workflowId, '', { timeout: 10 })).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a replay does not write the event again', async () => {
    const a = await engine();
    const h = await a.start('once', {}, { workflowId: 'once-1' });
    await a.getEvent(h.workflowId, 'once', { timeout: '10s' });
    await a.dispose();
    // Changed behind the engine's back: a replay that wrote its recorded event again would put it back.
    await env.tdb.query(`UPDATE weft.weft_events SET value = '"marker"' WHERE workflow_id = $1 AND key = 'once'`, [h.workflowId]);
    const b = await engine();
    await b.signal(h.workflowId, 'go');
    expect(await b.result(h.workflowId, { timeout: 20_000 })).toBe('ok');
    expect(await eventRows(h.workflowId)).toEqual([
      { key: 'done', value: true },
      { key: 'once', value: 'marker' },
    ]);
    expect((await b.describe(h.workflowId)).history.filter((o) => o.kind === 'setEvent').map((o) => o.name)).toEqual(['once', 'done']);
  });

  it('continue-as-new keeps the events: they belong to the workflow id', async () => {
    const e = await engine();
    const h = await e.start('chain', {}, { workflowId: 'chain-1' });
    expect(await h.result({ timeout: 20_000 })).toBe('ok');
    expect((await e.describe(h.workflowId)).runNumber).toBe(2);
    expect(await eventRows(h.workflowId)).toEqual([
      { key: 'first', value: 1 },
      { key: 'second', value: 2 },
    ]);
  });

  it('a restart of the id (start-new-if-terminal) keeps the events, and the streams go on after their last offset', async () => {
    const e = await engine();
    await (await e.start('restarted', { tag: 'a' }, { workflowId: 'again-1' })).result({ timeout: 10_000 });
    const h = await e.start('restarted', { tag: 'b' }, { workflowId: 'again-1', idPolicy: 'start-new-if-terminal' });
    expect(await h.result({ timeout: 10_000 })).toBe('b');
    expect((await eventRows(h.workflowId)).map((r) => [r.key, r.value])).toEqual([
      ['a', true],
      ['b', true],
      ['latest', 'b'],
    ]);
    const entries = await env.tdb.query<{ offset: number; value: unknown }>(
      `SELECT "offset", value FROM weft.weft_stream_entries WHERE workflow_id = $1 AND key = 'log' ORDER BY "offset"`,
      [h.workflowId],
    );
    expect(entries).toEqual([
      { offset: 0, value: 'a' },
      { offset: 1, value: 'b' },
    ]);
  });

  it('purge removes them with the workflow', async () => {
    const e = await engine();
    const h = await e.start('chain', {}, { workflowId: 'chain-2' });
    await h.result({ timeout: 20_000 });
    await e.purge(h.workflowId);
    expect(await eventRows(h.workflowId)).toEqual([]);
  });

  it('a value or key it cannot store is refused at the call, before anything is recorded', async () => {
    const e = await engine();
    const h = await e.start('refused', {}, { workflowId: 'refused-1' });
    const codes = await h.result({ timeout: 20_000 });
    expect(codes).toEqual([
      new PayloadNotSerializableError('x', '$', 'x').code,
      new PayloadNotSerializableError('x', '$', 'x').code,
      new PayloadTooLargeError('x', 2, 1).code,
      new InvalidArgumentError('x', 'x').code,
      new InvalidArgumentError('x', 'x').code,
      new PayloadNotSerializableError('x', '$', 'x').code,
    ]);
    expect(await eventRows(h.workflowId)).toEqual([{ key: 'ok', value: 1 }]);
    expect((await e.describe(h.workflowId)).history.map((o) => o.kind)).toEqual(['setEvent', 'step']);
  });
});
