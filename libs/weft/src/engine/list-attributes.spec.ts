import { heldWorkflow, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { InvalidArgumentError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import { attributeQuery, parseWhere, textValues } from './attribute-filter.js';
import type { WeftEngine } from './engine.js';

/** Adds `stage: 'done'` to what its start set, then returns its input doubled. */
class Order {
  async run(ctx: WorkflowContext, input: { n: number }) {
    await ctx.step('work', () => input.n);
    ctx.setAttributes({ stage: 'done' });
    return input.n * 2;
  }
}

/** Started with attributes up to the bound: one more key is refused, a swap is taken. */
class Full {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
    let refused = 'taken';
    try {
      ctx.setAttributes({ more: 1 });
    } catch (err) {
      refused = (err as { code?: string }).code ?? String(err);
    }
    ctx.setAttributes({ k0: null, extra: 1 });
    return ctx.step('done', () => refused);
  }
}

/** Tries one more key at once; its query answers what the try got, so a replay from the row can be compared. */
class OneMore {
  outcome = '';
  async run(ctx: WorkflowContext) {
    try {
      ctx.setAttributes({ more: 1 });
      this.outcome = 'taken';
    } catch (err) {
      this.outcome = (err as { code?: string }).code ?? String(err);
    }
    return ctx.step('done', () => this.outcome);
  }
  answer() {
    return this.outcome;
  }
}
const oneMore = { name: 'one-more', factory: () => new OneMore() as never, queryHandlers: { outcome: 'answer' } };

const held = heldWorkflow();

describe('attribute filters, parsed and checked', () => {
  it('text values: a number or boolean matches its text too, a JSON string only itself', () => {
    expect(textValues('42')).toEqual([42, '42']);
    expect(textValues('true')).toEqual([true, 'true']);
    expect(textValues('"42"')).toEqual(['42']);
    expect(textValues('eu-1')).toEqual(['eu-1']);
  });

  it('--where conditions become one filter; ranges on numbers and timestamps', () => {
    expect(parseWhere(['tenant=42', 'tenant=43', 'amount>100', 'amount<=500', 'at>=2026-12-06T14:00:00Z'])).toEqual({
      tenant: { in: [42, '42', 43, '43'] },
      amount: { gt: 100, lte: 500 },
      at: { gte: '2026-12-06T14:00:00Z' },
    });
    expect(attributeQuery({ tenant: 42, region: { in: ['eu', 'us'] }, at: { gte: new Date('2026-12-06T14:00:00Z') } })).toEqual({
      contains: [[{ tenant: 42 }], [{ region: 'eu' }, { region: 'us' }]],
      ranges: [{ key: 'at', op: '>=', on: 'timestamp', value: '2026-12-06T14:00:00.000Z' }],
    });
    for (const bad of [
      { '1x': 1 },
      { a: { in: [] } },
      { a: { gt: 'soon' } },
      { a: { like: 'x' } },
      { a: { nested: true } as never },
      { a: 'x'.repeat(257) },
      Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, i])),
    ])
      expect(() => attributeQuery(bad), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    expect(() => parseWhere(['tenant'])).toThrow(InvalidArgumentError);
    expect(() => parseWhere(['9=1'])).toThrow(InvalidArgumentError);
  });
});

describe('start attributes and list by attribute (real PostgreSQL)', () => {
  const env = useTestEngines();
  const engine = async () => {
    const e = await env.pool.create({}, (x: WeftEngine) => x.register('order', Order).register('full', Full));
    await e.bootstrap();
    return e;
  };

  it('start(..., { attributes }) is stored with the row; setAttributes merges into it', async () => {
    const e = await engine();
    const at = new Date('2026-12-06T14:00:00Z');
    await e.start('order', { n: 1 }, { workflowId: 'o-1', attributes: { tenant: 42, at } });
    await e.result('o-1', { timeout: 10_000 });
    expect((await e.describe('o-1')).attributes).toEqual({ tenant: 42, at: at.toISOString(), stage: 'done' });
  });

  it('start attributes are bounded before anything is written', async () => {
    const e = await engine();
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, i]));
    for (const attributes of [many, { '1bad': 1 }, { s: '\u0000' }, { o: {} }, []] as never[])
      await expect(e.start('order', { n: 1 }, { workflowId: 'refused', attributes })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(e.describe('refused')).rejects.toThrow(/No workflow with id/);
  });

  it('a run counts its start attributes in the bound, live and recovered on another engine', async () => {
    const a = await engine();
    const full = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, i]));
    await a.start('full', {}, { workflowId: 'full-live', attributes: full });
    await a.signal('full-live', 'go');
    expect(await a.result('full-live', { timeout: 10_000 })).toBe('WEFT_INVALID_ARGUMENT');
    await a.start('full', {}, { workflowId: 'full-1', attributes: full });
    await a.dispose();
    const b = await engine();
    await waitFor(() => b.describe('full-1').then((d) => d.status === 'running'), 'recovered');
    await b.signal('full-1', 'go');
    expect(await b.result('full-1', { timeout: 10_000 })).toBe('WEFT_INVALID_ARGUMENT');
    const d = await b.describe('full-1');
    expect(Object.keys(d.attributes)).toHaveLength(32);
    expect(d.attributes.extra).toBe(1);
    expect(d.attributes.k0).toBeUndefined();
  });

  // Runs launched after their start (an admission, a hand-off, a timer) begin with the row's attributes
  // as a direct start's run does: live and a replay from the row (a query here) agree on the bound.
  const full = Object.fromEntries(Array.from({ length: 32 }, (_, i) => [`k${i}`, i]));
  const agreeOnTheBound = async (e: WeftEngine, ids: string[]) => {
    for (const id of ids) {
      expect(await e.result(id, { timeout: 15_000 }), id).toBe('WEFT_INVALID_ARGUMENT');
      expect(await e.query(id, 'outcome'), id).toBe('WEFT_INVALID_ARGUMENT');
      expect(Object.keys((await e.describe(id)).attributes), id).toHaveLength(32);
    }
  };

  it('a queued run counts its start attributes in the bound, admitted by a pass or handed a slot by an end', async () => {
    // Polling every 60 s: the first is admitted by the pass the held run's end nudges, the others by hand-offs.
    const slow = { timerPollInterval: '60s', ownership: 'workflow-lease', queues: { q: { concurrency: 1 } } } as const;
    const a = await env.pool.create(slow, (x: WeftEngine) => x.register('held', held.Held).register(oneMore));
    const starter = await env.pool.create({ ...slow, backgroundTasks: 'manual' }, (x: WeftEngine) => x.register(oneMore));
    await a.bootstrap();
    await starter.bootstrap();
    held.began = false;
    await a.start('held', {}, { workflowId: 'held-1', queue: 'q' });
    await waitFor(() => held.began, 'the held run');
    const ids = ['queued-1', 'queued-2', 'queued-3'];
    for (const id of ids) await starter.start('one-more', {}, { workflowId: id, queue: 'q', attributes: full });
    held.release();
    await agreeOnTheBound(a, ids);
  });

  it('a delayed or debounced run counts its start attributes in the bound', async () => {
    const e = await env.pool.create({}, (x: WeftEngine) => x.register(oneMore));
    await e.bootstrap();
    const delayed = await e.start('one-more', {}, { workflowId: 'delayed-1', startAfter: '20ms', attributes: full });
    const debounced = await e.start('one-more', {}, { debounce: { key: 'd', delay: '20ms' }, attributes: full });
    await agreeOnTheBound(e, [delayed.workflowId, debounced.workflowId]);
  });

  it('filters by equality, in and ranges; orders newest or oldest; pages with a stable cursor; includes input and output', async () => {
    const e = await engine();
    for (let i = 0; i < 30; i++) {
      await e.start(
        'order',
        { n: i },
        {
          workflowId: `l-${String(i).padStart(2, '0')}`,
          attributes: { tenant: i % 3, amount: i * 10, region: i % 2 ? 'eu' : 'us', at: new Date(Date.UTC(2026, 11, 1 + i)) },
        },
      );
    }
    await waitFor(async () => (await e.list({ status: 'completed', idPrefix: 'l-', limit: 1000 })).items.length === 30, 'all completed');
    const ids = async (filter: Parameters<WeftEngine['list']>[0]) =>
      (await e.list({ limit: 1000, idPrefix: 'l-', ...filter })).items.map((i) => i.workflowId);
    const all = Array.from({ length: 30 }, (_, i) => `l-${String(i).padStart(2, '0')}`);
    expect(await ids({ attributes: { tenant: 1 } })).toEqual(all.filter((_, i) => i % 3 === 1));
    expect(await ids({ attributes: { tenant: '1' } })).toEqual([]); // a number is not its text
    expect(await ids({ attributes: { tenant: { in: [0, 2] }, region: 'eu' } })).toEqual(all.filter((_, i) => i % 3 !== 1 && i % 2 === 1));
    expect(await ids({ attributes: { amount: { gt: 100, lte: 150 } } })).toEqual(all.slice(11, 16));
    expect(await ids({ attributes: { at: { gte: new Date(Date.UTC(2026, 11, 29)) } } })).toEqual(all.slice(28));
    expect(await ids({ attributes: { at: { lt: '2026-12-03' } } })).toEqual(all.slice(0, 2));
    expect(await ids({ attributes: parseWhere(['tenant=2', 'amount>=200']) })).toEqual(all.filter((_, i) => i % 3 === 2 && i >= 20));
    expect(await ids({ attributes: { stage: 'done' }, status: 'failed' })).toEqual([]);
    expect(await ids({ order: 'newest' })).toEqual([...all].reverse());

    // Pages in either order: every id once, in order, while new workflows start meanwhile.
    for (const order of ['oldest', 'newest'] as const) {
      const seen: string[] = [];
      let cursor: string | undefined;
      let extra = 0;
      do {
        const page = await e.list({ attributes: { region: 'eu' }, order, limit: 4, cursor });
        seen.push(...page.items.map((i) => i.workflowId));
        cursor = page.nextCursor ?? undefined;
        await e.start('order', { n: 0 }, { workflowId: `x-${order}-${extra++}`, attributes: { region: 'us' } });
      } while (cursor);
      const expected = all.filter((_, i) => i % 2 === 1);
      expect(seen).toEqual(order === 'newest' ? [...expected].reverse() : expected);
    }
    const first = await e.list({ order: 'newest', limit: 1 });
    await expect(e.list({ cursor: first.nextCursor! })).rejects.toThrow(/order "newest"/);

    const [item] = (await e.list({ attributes: { tenant: 0, amount: 30 }, include: ['input', 'output'] })).items;
    expect(item).toMatchObject({ workflowId: 'l-03', input: { n: 3 }, output: 6, attributes: { tenant: 0, stage: 'done' } });
    const [bare] = (await e.list({ attributes: { amount: 30 } })).items;
    expect('input' in bare || 'output' in bare).toBe(false);
    await expect(e.list({ include: ['error' as never] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(e.list({ order: 'up' as never })).rejects.toBeInstanceOf(InvalidArgumentError);
  });
});
