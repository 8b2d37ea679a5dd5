// ctx.writeStream / ctx.closeStream and engine.readStream (docs/events-and-streams.md), on a real PostgreSQL.
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { StreamEntry, WorkflowContext } from '../common/types.js';
import { NOTICE_VALUE_BYTES, type TalkNotice } from '../storage/talk-notice.js';
import type { WeftEngine } from './engine.js';

/** Writes 'a', then 'b' and 'c' once told to go, then closes. */
class Writer {
  async run(ctx: WorkflowContext) {
    await ctx.writeStream('out', 'a');
    await ctx.step('work', () => 1);
    await ctx.waitForSignal('go');
    await ctx.writeStream('out', 'b');
    await ctx.writeStream('out', { c: true });
    await ctx.closeStream('out');
    const codes: string[] = [];
    try {
      await ctx.writeStream('out', 'late');
    } catch (err) {
      codes.push((err as { code: string }).code);
    }
    return codes;
  }
}

/** A step body writes an entry per attempt, failing its first attempt: at least once. */
class StepWriter {
  async run(ctx: WorkflowContext) {
    await ctx.step(
      'tokens',
      async ({ attempt }) => {
        await ctx.writeStream('tokens', `t1-attempt${attempt}`);
        if (attempt === 1) throw new Error('flaky');
        await ctx.writeStream('tokens', 't2');
        return attempt;
      },
      { retry: { maxAttempts: 3, initialInterval: 10 } },
    );
    return 'ok';
  }
}

/** Workflow code and three step bodies write one stream at once: offsets stay dense. */
class Crowd {
  async run(ctx: WorkflowContext) {
    const body = (name: string) => async () => {
      for (let i = 0; i < 20; i++) await ctx.writeStream('crowd', `${name}-${i}`);
      return name;
    };
    const steps = Promise.all(['s1', 's2', 's3'].map((n) => ctx.step(n, body(n))));
    for (let i = 0; i < 10; i++) await ctx.writeStream('crowd', `wf-${i}`);
    await steps;
    for (let i = 10; i < 20; i++) await ctx.writeStream('crowd', `wf-${i}`);
    return 'ok';
  }
}

/** Run 1 writes 'r1' and continues; run 2 writes 'r2' and ends without closing. */
class Chain {
  async run(ctx: WorkflowContext, input: { second?: boolean }) {
    if (input.second) {
      await ctx.writeStream('log', 'r2');
      return ctx.step('second', () => 'ok');
    }
    await ctx.writeStream('log', 'r1');
    await ctx.step('first', () => 'ok');
    return ctx.continueAsNew({ second: true });
  }
}

/**
 * Run 1 writes 'r1', closes 'closed', writes 'r1' to 'open', waits for 'go' and continues; run 2
 * writes to both (its entry to 'closed' is not stored) and to a key of its own, and ends.
 */
class ClosingChain {
  async run(ctx: WorkflowContext, input: { second?: boolean }) {
    if (input.second) {
      await ctx.writeStream('closed', 'r2');
      await ctx.writeStream('open', 'r2');
      await ctx.writeStream(`tokens-${ctx.runNumber}`, 'mine');
      return ctx.step('second', () => 'ok');
    }
    await ctx.writeStream('closed', 'r1');
    await ctx.closeStream('closed');
    await ctx.writeStream('open', 'r1');
    await ctx.waitForSignal('go');
    return ctx.continueAsNew({ second: true });
  }
}

/** One entry from workflow code and one from a step body, each alone in its statement; then, told to end, one too long for a notice. */
class Notices {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
    await ctx.writeStream('s', 'hi');
    await ctx.step('tok', async () => {
      await ctx.writeStream('s', { t: 'tok' });
      return 1;
    });
    await ctx.waitForSignal('end');
    await ctx.writeStream('s', 'x'.repeat(NOTICE_VALUE_BYTES + 10));
    await ctx.closeStream('s');
    return 'ok';
  }
}

async function collect(it: AsyncIterable<StreamEntry>): Promise<StreamEntry[]> {
  const out: StreamEntry[] = [];
  for await (const e of it) out.push(e);
  return out;
}

describe('ctx.writeStream and engine.readStream (real PostgreSQL)', () => {
  const env = useTestEngines();

  const engine = async () => {
    const e = await env.pool.create({}, (x: WeftEngine) =>
      x
        .register('writer', Writer)
        .register('step-writer', StepWriter)
        .register('crowd', Crowd)
        .register('chain', Chain)
        .register('closing-chain', ClosingChain)
        .register('notices', Notices),
    );
    await e.bootstrap();
    return e;
  };
  const rows = (id: string, key: string) =>
    env.tdb.query<{ offset: number; value: unknown; attempt: number | null }>(
      'SELECT "offset", value, attempt FROM weft.weft_stream_entries WHERE workflow_id = $1 AND key = $2 ORDER BY "offset"',
      [id, key],
    );

  /**
   * A reader engine that registers nothing (it never runs a step body a second time, at least
   * once, beside the writer), whose stream reads find no entries while blind: only the notices
   * can give them then. `reads`: how many reads it made.
   */
  const blindableReader = async () => {
    const b = await env.pool.create({});
    await b.bootstrap();
    let reads = 0;
    let blinded = false;
    const read = b.store.streams.read.bind(b.store.streams);
    b.store.streams.read = async (...args: Parameters<typeof read>) => {
      reads++;
      const r = await read(...args);
      return blinded && r ? { ...r, entries: [] } : r;
    };
    return { b, reads: () => reads, blind: (on: boolean) => void (blinded = on) };
  };

  it('workflow code: a reader on another engine follows the entries as they commit and ends at the close', async () => {
    const a = await engine();
    const b = await engine();
    const h = await a.start('writer', {}, { workflowId: 'w-1' });
    const read = collect(b.readStream(h.workflowId, 'out'));
    await waitFor(async () => (await rows(h.workflowId, 'out')).length === 1, 'the first entry');
    await h.signal('go');
    const entries = await read;
    expect(entries.map((e) => [e.offset, e.value, e.attempt])).toEqual([
      [0, 'a', null],
      [1, 'b', null],
      [2, { c: true }, null],
    ]);
    expect(entries.every((e) => e.at instanceof Date)).toBe(true);
    // A write after the close is refused at the call.
    expect(await h.result({ timeout: 10_000 })).toEqual(['WEFT_STREAM_CLOSED']);
    // `from` is inclusive; a reader that comes after the close gets the rest and ends.
    expect((await collect(a.readStream(h.workflowId, 'out', { from: 1 }))).map((e) => e.offset)).toEqual([1, 2]);
    const d = await a.describe(h.workflowId);
    expect(d.history.filter((o) => o.kind === 'writeStream' || o.kind === 'closeStream').map((o) => o.kind)).toEqual([
      'writeStream',
      'writeStream',
      'writeStream',
      'closeStream',
    ]);
  });

  it('a replay does not append again: exactly once from workflow code across a restart', async () => {
    const a = await engine();
    const h = await a.start('writer', {}, { workflowId: 'w-2' });
    await waitFor(async () => (await rows(h.workflowId, 'out')).length === 1, 'the first entry');
    await waitFor(() => a.describe(h.workflowId).then((d) => d.history.some((o) => o.kind === 'step')), 'the step recorded');
    await a.dispose();
    const b = await engine();
    await b.signal(h.workflowId, 'go');
    await b.result(h.workflowId, { timeout: 10_000 });
    expect((await rows(h.workflowId, 'out')).map((r) => r.value)).toEqual(['a', 'b', { c: true }]);
  });

  it('a step body: appended at once, tagged with the attempt, at least once (a retried body writes again)', async () => {
    const e = await engine();
    const h = await e.start('step-writer', {}, { workflowId: 'sw-1' });
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
    expect((await rows(h.workflowId, 'tokens')).map((r) => [r.offset, r.value, r.attempt])).toEqual([
      [0, 't1-attempt1', 1],
      [1, 't1-attempt2', 2],
      [2, 't2', 2],
    ]);
    // Not closed: the reader ends because the workflow ended.
    expect((await collect(e.readStream(h.workflowId, 'tokens'))).map((x) => x.offset)).toEqual([0, 1, 2]);
  });

  it('workflow code and concurrent step bodies on one stream: offsets dense from 0, each entry once', async () => {
    const e = await engine();
    const h = await e.start('crowd', {}, { workflowId: 'crowd-1' });
    expect(await h.result({ timeout: 20_000 })).toBe('ok');
    const all = await rows(h.workflowId, 'crowd');
    expect(all.map((r) => r.offset)).toEqual(Array.from({ length: 80 }, (_, i) => i));
    expect(new Set(all.map((r) => r.value)).size).toBe(80);
    // Each writer's own entries keep its order.
    const of = (p: string) => all.map((r) => r.value as string).filter((v) => v.startsWith(`${p}-`));
    expect(of('wf')).toEqual(Array.from({ length: 20 }, (_, i) => `wf-${i}`));
    expect(of('s2')).toEqual(Array.from({ length: 20 }, (_, i) => `s2-${i}`));
  });

  it('continue-as-new keeps the stream: the next run appends after the last offset; purge removes it', async () => {
    const e = await engine();
    const h = await e.start('chain', {}, { workflowId: 'chain-1' });
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
    expect((await e.describe(h.workflowId)).runNumber).toBe(2);
    expect((await collect(e.readStream(h.workflowId, 'log'))).map((x) => [x.offset, x.value])).toEqual([
      [0, 'r1'],
      [1, 'r2'],
    ]);
    await e.purge(h.workflowId);
    expect(await rows(h.workflowId, 'log')).toEqual([]);
    expect(await env.tdb.query('SELECT 1 FROM weft.weft_streams WHERE workflow_id = $1', [h.workflowId])).toEqual([]);
  });

  it('continue-as-new: a reader follows the workflow across the switch; a stream an earlier run closed stays closed', async () => {
    const a = await engine();
    const b = await engine();
    const h = await a.start('closing-chain', {}, { workflowId: 'cc-1' });
    // Readers on another engine, started while run 1 is parked: 'open' goes on across the switch.
    const open = collect(b.readStream(h.workflowId, 'open'));
    const closed = collect(b.readStream(h.workflowId, 'closed'));
    await waitFor(async () => (await rows(h.workflowId, 'open')).length === 1, "run 1's entry");
    expect((await closed).map((x) => [x.offset, x.value])).toEqual([[0, 'r1']]);
    await h.signal('go');
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
    expect((await a.describe(h.workflowId)).runNumber).toBe(2);
    expect((await open).map((x) => [x.offset, x.value])).toEqual([
      [0, 'r1'],
      [1, 'r2'],
    ]);
    // Run 2 did not know of the close: its entry to 'closed' is not stored, and it went on.
    expect((await rows(h.workflowId, 'closed')).map((r) => r.value)).toEqual(['r1']);
    expect((await collect(a.readStream(h.workflowId, 'tokens-2'))).map((x) => x.value)).toEqual(['mine']);
  });

  it('a reader yields the entry its notice carries before reading; a value too long for a notice is read', async () => {
    const a = await engine();
    const { b, reads, blind } = await blindableReader();
    const h = await a.start('notices', {}, { workflowId: 'notices-1' });
    const it = b.readStream(h.workflowId, 's')[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => reads() >= 1, 'the reader waiting after its first read');
    blind(true);
    await h.signal('go');
    const hi = (await first).value as StreamEntry;
    expect([hi.offset, hi.value, hi.attempt, hi.at instanceof Date && !Number.isNaN(hi.at.getTime())]).toEqual([0, 'hi', null, true]);
    const tok = (await it.next()).value as StreamEntry;
    expect([tok.offset, tok.value, tok.attempt]).toEqual([1, { t: 'tok' }, 1]);
    blind(false);
    await h.signal('end');
    const long = (await it.next()).value as StreamEntry;
    expect([long.offset, long.value]).toEqual([2, 'x'.repeat(NOTICE_VALUE_BYTES + 10)]);
    expect((await it.next()).done).toBe(true);
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
  });

  it('notices that arrive together (one read off the socket) are all yielded, in order, with no read', async () => {
    const a = await engine();
    const { b, reads, blind } = await blindableReader();
    // b's notices of this stream are held until both entries' have come, then handed on in one
    // go: what a reader sees when two NOTIFYs arrive in one TCP read before it wakes.
    const waiters = (b as unknown as { waiters: { notified(n: TalkNotice): void } }).waiters;
    const notified = waiters.notified.bind(waiters);
    const held: TalkNotice[] = [];
    waiters.notified = (n: TalkNotice) => {
      if (n.workflowId !== 'burst-1' || held.length >= 2) return notified(n);
      held.push(n);
      if (held.length === 2) for (const x of held) notified(x);
    };
    const h = await a.start('notices', {}, { workflowId: 'burst-1' });
    const it = b.readStream(h.workflowId, 's')[Symbol.asyncIterator]();
    const first = it.next();
    await waitFor(() => reads() >= 1, 'the reader waiting after its first read');
    blind(true);
    await h.signal('go');
    const got = [(await first).value as StreamEntry, (await it.next()).value as StreamEntry];
    expect(got.map((e) => [e.offset, e.value])).toEqual([
      [0, 'hi'],
      [1, { t: 'tok' }],
    ]);
    blind(false);
    await h.signal('end');
    expect(((await it.next()).value as StreamEntry).offset).toBe(2);
    expect((await it.next()).done).toBe(true);
    expect(await h.result({ timeout: 10_000 })).toBe('ok');
  });

  it('refuses a bad offset or key at the call, and a stream of no workflow', async () => {
    const e = await engine();
    expect(() => e.readStream('x', 'k', { from: -1 })).toThrow(/offset/);
    expect(() => e.readStream('x', '', {})).toThrow(/stream key/);
    await expect(collect(e.readStream('no-such', 'k'))).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
  });
});
