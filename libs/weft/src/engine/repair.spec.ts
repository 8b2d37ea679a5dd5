import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { ForkRefusedError, InvalidArgumentError, WorkflowNotRunningError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// The bodies that ran, by workflow and step: a repair must not run a kept step again.
const ledger = new Map<string, number>();
const ran = (id: string, step: string) => ledger.set(`${id}:${step}`, (ledger.get(`${id}:${step}`) ?? 0) + 1);
const count = (id: string, step: string) => ledger.get(`${id}:${step}`) ?? 0;

/** The bad deploy: charge throws for one tenant until the code is fixed. */
let brokenTenant: number | null = null;
/** The code as deployed: v2 renames the first step (a change the kept history cannot replay). */
let reserveName = 'reserve';

class Checkout {
  async run(ctx: WorkflowContext, input: { tenant: number }) {
    const id = ctx.workflowId;
    await ctx.step(reserveName, () => void ran(id, 'reserve'));
    await ctx.step('price', () => (ran(id, 'price'), 100));
    await ctx.step(
      'charge',
      () => {
        ran(id, 'charge');
        if (input.tenant === brokenTenant) throw new Error('card service rejected the new payload');
        return 'charged';
      },
      { retry: { maxAttempts: 1 } },
    );
    ctx.setAttributes({ stage: 'charged' });
    await ctx.step('ship', () => void ran(id, 'ship'));
    return 'ok';
  }
}

describe('repair: fork and retry (real PostgreSQL)', () => {
  const env = useTestEngines();
  let e: WeftEngine;
  beforeEach(async () => {
    ledger.clear();
    brokenTenant = null;
    reserveName = 'reserve';
    e = await env.pool.create({}, (x: WeftEngine) => x.register('checkout', Checkout));
    await e.bootstrap();
  });

  it('the bad deploy: 300 orders of 3 tenants, charge fails for one; listed by attribute and status, fixed, retried in bulk', async () => {
    brokenTenant = 2;
    const ids = Array.from({ length: 300 }, (_, i) => `order-${String(i).padStart(3, '0')}`);
    await Promise.all(ids.map((id, i) => e.start('checkout', { tenant: i % 3 }, { workflowId: id, attributes: { tenant: i % 3 } })));
    await waitFor(
      async () => (await e.list({ idPrefix: 'order-', status: ['running'], limit: 1 })).items.length === 0,
      'every order ended',
      60_000,
    );
    const failedIds: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await e.list({ attributes: { tenant: 2 }, status: 'failed', limit: 40, cursor });
      failedIds.push(...page.items.map((i) => i.workflowId));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const broken = ids.filter((_, i) => i % 3 === 2);
    expect(failedIds).toEqual(broken);
    expect((await e.list({ idPrefix: 'order-', status: 'completed', limit: 1000 })).items).toHaveLength(200);
    const before = new Map(ids.map((id) => [id, { reserve: count(id, 'reserve'), ship: count(id, 'ship') }]));

    brokenTenant = null; // the fix is deployed
    for (const id of failedIds) await e.retry(id);
    await waitFor(
      async () => (await e.list({ attributes: { tenant: 2 }, status: 'completed', limit: 1000 })).items.length === 100,
      'the retried orders completed',
      60_000,
    );
    for (const id of broken) {
      expect([count(id, 'reserve'), count(id, 'price'), count(id, 'charge'), count(id, 'ship')], id).toEqual([1, 1, 2, 1]);
      const d = await e.describe(id);
      expect(d).toMatchObject({ status: 'completed', runNumber: 2, retriedFrom: { runNumber: 1, fromSeq: 2 }, output: 'ok' });
      expect(d.attributes).toEqual({ tenant: 2, stage: 'charged' });
    }
    for (const id of ids.filter((_, i) => i % 3 !== 2)) {
      expect(count(id, 'charge'), id).toBe(1);
      expect({ reserve: count(id, 'reserve'), ship: count(id, 'ship') }).toEqual(before.get(id));
      expect((await e.describe(id)).runNumber).toBe(1);
    }
    // Retrying again is refused: it is no longer failed.
    await expect(e.retry(broken[0])).rejects.toBeInstanceOf(WorkflowNotRunningError);
  }, 120_000);

  it('fork from a step name or a seq: a new workflow that keeps the steps before it and runs the rest', async () => {
    await e.start('checkout', { tenant: 1 }, { workflowId: 'src', attributes: { tenant: 1 } });
    expect(await e.result('src', { timeout: 10_000 })).toBe('ok');
    const byName = await e.fork('src', { fromStep: 'charge', workflowId: 'src-fork-charge' });
    expect(await byName.result({ timeout: 10_000 })).toBe('ok');
    expect([count('src-fork-charge', 'reserve'), count('src-fork-charge', 'price'), count('src-fork-charge', 'charge')]).toEqual([0, 0, 1]);
    const d = await e.describe('src-fork-charge');
    expect(d).toMatchObject({ forkedFrom: { workflowId: 'src', runNumber: 1, fromSeq: 2 }, runNumber: 1, input: { tenant: 1 } });
    expect(d.attributes).toEqual({ tenant: 1, stage: 'charged' });
    expect(d.history.map((o) => o.name)).toEqual(['reserve', 'price', 'charge', 'setAttributes', 'ship']);

    const bySeq = await e.fork('src', { fromStep: 0 });
    expect(await bySeq.result({ timeout: 10_000 })).toBe('ok');
    expect(count(bySeq.workflowId, 'reserve')).toBe(1);
    expect((await e.describe(bySeq.workflowId)).attributes).toEqual({ tenant: 1, stage: 'charged' });
    // The source is untouched.
    const src = await e.describe('src');
    expect([src.status, src.runNumber, src.forkedFrom, src.retriedFrom]).toEqual(['completed', 1, null, null]);
  });

  it('a kept part that does not replay on the current code refuses the fork and the retry, writing nothing', async () => {
    brokenTenant = 0;
    await e.start('checkout', { tenant: 0 }, { workflowId: 'old' });
    await expect(e.result('old', { timeout: 10_000 })).rejects.toThrow();
    reserveName = 'reserve-v2'; // the deploy renamed the first step
    const refused = await e.fork('old', { fromStep: 'charge', workflowId: 'never' }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ForkRefusedError);
    expect((refused as ForkRefusedError).code).toBe('WEFT_FORK_REFUSED');
    expect((refused as ForkRefusedError).report).toMatchObject({ ok: false, workflowId: 'old' });
    expect((refused as ForkRefusedError).report.error.message).toMatch(/reserve/);
    await expect(e.describe('never')).rejects.toThrow(/No workflow/);
    await expect(e.retry('old')).rejects.toBeInstanceOf(ForkRefusedError);
    expect((await e.describe('old')).status).toBe('failed');
    // Forking before the renamed step replays nothing old: accepted.
    brokenTenant = null;
    expect(await (await e.fork('old', { fromStep: 0 })).result({ timeout: 10_000 })).toBe('ok');
  });

  it('bad fork options are refused before anything is read', async () => {
    await e.start('checkout', { tenant: 1 }, { workflowId: 'opts' });
    await e.result('opts', { timeout: 10_000 });
    for (const opts of [{ fromStep: 'nope' }, { fromStep: -1 }, { fromStep: 99 }, { fromStep: 1.5 }, { fromStep: 'charge', extra: 1 }])
      await expect(e.fork('opts', opts as never), JSON.stringify(opts)).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(e.fork('opts', { fromStep: 'charge', workflowId: 'opts' })).rejects.toThrow(/already/);
  });
});

describe('repair under ownership workflow-lease (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('retry and fork claim the run they write; a second engine running the type does not run it twice', async () => {
    ledger.clear();
    brokenTenant = 1;
    reserveName = 'reserve';
    const make = async () => {
      const x = await env.pool.create({ ownership: 'workflow-lease' }, (w: WeftEngine) => w.register('checkout', Checkout));
      await x.bootstrap();
      return x;
    };
    const [a, b] = [await make(), await make()];
    await a.start('checkout', { tenant: 1 }, { workflowId: 'wl-1' });
    await expect(a.result('wl-1', { timeout: 10_000 })).rejects.toThrow();
    brokenTenant = null;
    await b.retry('wl-1');
    expect(await a.result('wl-1', { timeout: 10_000 })).toBe('ok');
    const f = await a.fork('wl-1', { fromStep: 'price', workflowId: 'wl-fork' });
    expect(await b.result(f.workflowId, { timeout: 10_000 })).toBe('ok');
    expect([count('wl-1', 'reserve'), count('wl-1', 'charge'), count('wl-1', 'ship')]).toEqual([1, 2, 1]);
    expect([count('wl-fork', 'reserve'), count('wl-fork', 'price'), count('wl-fork', 'ship')]).toEqual([0, 1, 1]);
  });
});
