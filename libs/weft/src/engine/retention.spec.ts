import { useTestEngines } from '../../../../test/support/engine.js';
import type { Duration } from '../common/duration.js';
import type { WorkflowContext } from '../common/types.js';
import { RETENTION_BATCH } from './retention.js';

class Quick {
  async run(ctx: WorkflowContext, input: { fail?: boolean }) {
    await ctx.step('one', () => 1);
    if (input?.fail) throw new Error('failed on purpose');
    return 'done';
  }
}

class Waits {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    await ctx.waitForSignal('go');
  }
}

/** Runs one child with the default id (`${id}/0` in run 1); a failed child is caught. */
class Order {
  async run(ctx: WorkflowContext, input: { fail?: boolean; tag: string }) {
    try {
      return await ctx.executeChild<string>('item', input);
    } catch {
      return `child failed (${input.tag})`;
    }
  }
}

class Item {
  async run(ctx: WorkflowContext, input: { fail?: boolean; tag: string }) {
    await ctx.step('one', () => 1);
    if (input.fail) throw new Error('item failed on purpose');
    return `item done (${input.tag})`;
  }
}

/** Publishes an event and a closed stream, then ends. */
class Talker {
  async run(ctx: WorkflowContext) {
    await ctx.setEvent('status', 'done');
    await ctx.writeStream('log', 'one');
    await ctx.closeStream('log');
    return ctx.step('one', () => 1);
  }
}

const WF = 'weft.weft_workflows';

describe('retention and purge (real PostgreSQL)', () => {
  const env = useTestEngines();
  const q = <R = Record<string, unknown>>(sql: string, params?: unknown[]) => env.tdb.query<R>(sql, params);
  const count = async (table: string, where: string, params?: unknown[]) =>
    (await q<{ n: number }>(`SELECT count(*)::int AS n FROM weft.${table} WHERE ${where}`, params))[0].n;
  const age = (prefix: string, ago: string) =>
    q(`UPDATE ${WF} SET completed_at = now() - $2::interval WHERE id LIKE $1`, [`${prefix}%`, ago]);

  it('deletes ended workflows past their status age with their histories, in bounded batches; running ones and young ones stay', async () => {
    const e = await env.pool.create({ backgroundTasks: 'manual', retention: { completed: '1h', failed: '2h' } }, (x) =>
      x.register('quick', Quick).register('waits', Waits),
    );
    await e.bootstrap();
    const n = RETENTION_BATCH + 20;
    const done = await Promise.all(Array.from({ length: n }, (_, i) => e.start('quick', {}, { workflowId: `old-ok-${i}` })));
    await Promise.all(done.map((h) => h.result({ timeout: '20s' })));
    await e.start('quick', { fail: true }, { workflowId: 'old-failed' }).then((h) => h.result({ timeout: '10s' }).catch(() => undefined));
    await e.start('quick', { fail: true }, { workflowId: 'young-failed' }).then((h) => h.result({ timeout: '10s' }).catch(() => undefined));
    await e.start('quick', {}, { workflowId: 'young-ok' }).then((h) => h.result({ timeout: '10s' }));
    const running = await e.start('waits', {}, { workflowId: 'still-running' });
    await e.signal('old-ok-0', 'late', { x: 1 }).catch(() => undefined); // a message on an ended workflow
    await age('old-', '3 hours');
    await age('young-failed', '90 minutes'); // past 'completed' age, not past 'failed' age
    await q(`UPDATE ${WF} SET completed_at = now() - interval '3 hours' WHERE id = 'still-running'`); // a lie: running must stay anyway
    const claimsBefore = await count('weft_workflow_claims', `workflow_id LIKE 'old-%'`);

    const { purged } = await e.runMaintenance();
    expect(purged).toBe(n + 1);
    expect(await count('weft_workflows', `id LIKE 'old-%'`)).toBe(0);
    expect(await count('weft_operations', `workflow_id LIKE 'old-%'`)).toBe(0);
    expect(await count('weft_messages', `workflow_id LIKE 'old-%'`)).toBe(0);
    expect(await count('weft_timers', `workflow_id LIKE 'old-%'`)).toBe(0);
    expect((await q<{ id: string }>(`SELECT id FROM ${WF} ORDER BY id`)).map((r) => r.id)).toEqual([
      'still-running',
      'young-failed',
      'young-ok',
    ]);
    // Claim rows outlive the purge: a restarted id's epoch keeps growing.
    expect(await count('weft_workflow_claims', `workflow_id LIKE 'old-%'`)).toBe(claimsBefore);
    expect((await e.runMaintenance()).purged).toBe(0);
    await e.signal(running.workflowId, 'go');
    await running.result({ timeout: '10s' });
  });

  it("retention takes a workflow's events and streams with it (they are its history); a young one keeps them", async () => {
    const e = await env.pool.create({ backgroundTasks: 'manual', retention: { completed: '1h' } }, (x) => x.register('talker', Talker));
    await e.bootstrap();
    for (const id of ['talk-old', 'talk-young']) await (await e.start('talker', {}, { workflowId: id })).result({ timeout: '10s' });
    const held = async (id: string) =>
      [
        await count('weft_events', 'workflow_id = $1', [id]),
        await count('weft_streams', 'workflow_id = $1', [id]),
        await count('weft_stream_entries', 'workflow_id = $1', [id]),
      ].join('/');
    expect([await held('talk-old'), await held('talk-young')]).toEqual(['1/1/1', '1/1/1']);
    await age('talk-old', '2 hours');
    expect((await e.runMaintenance()).purged).toBeGreaterThanOrEqual(1);
    expect([await held('talk-old'), await held('talk-young')]).toEqual(['0/0/0', '1/1/1']);
    await expect(e.getEvent('talk-old', 'status', { timeout: 0 })).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    await expect(e.readStream('talk-old', 'log')[Symbol.asyncIterator]().next()).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    expect(await e.getEvent('talk-young', 'status', { timeout: 0 })).toBe('done');
  });

  it('one engine purges at a time: the other skips the pass while the first holds it', async () => {
    const opts = { backgroundTasks: 'manual' as const, retention: { completed: '1ms' as const } };
    const [a, b] = await Promise.all([1, 2].map(() => env.pool.create(opts, (x) => x.register('quick', Quick))));
    await Promise.all([a.bootstrap(), b.bootstrap()]);
    const hs = await Promise.all(Array.from({ length: 300 }, (_, i) => a.start('quick', {}, { workflowId: `pair-${i}` })));
    await Promise.all(hs.map((h) => h.result({ timeout: '20s' })));
    await age('pair-', '1 minute');
    const completed = await count('weft_workflows', `status = 'completed'`); // earlier tests' too
    const [ra, rb] = await Promise.all([a.runMaintenance(), b.runMaintenance()]);
    expect(ra.purged + rb.purged).toBe(completed);
    expect(await count('weft_workflows', `id LIKE 'pair-%'`)).toBe(0);
  });

  it('purge(id): one ended workflow; typed refusals for a running one and a missing one', async () => {
    const e = await env.pool.create({ backgroundTasks: 'manual' }, (x) => x.register('quick', Quick).register('waits', Waits));
    await e.bootstrap();
    await (await e.start('quick', {}, { workflowId: 'p-done' })).result({ timeout: '10s' });
    const live = await e.start('waits', {}, { workflowId: 'p-live' });
    await e.purge('p-done');
    expect(await count('weft_workflows', `id = 'p-done'`)).toBe(0);
    expect(await count('weft_operations', `workflow_id = 'p-done'`)).toBe(0);
    await expect(e.purge('p-done')).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    await expect(e.purge('p-live')).rejects.toMatchObject({ code: 'WEFT_PURGE_REFUSED', reason: 'live', status: 'running' });
    expect(await count('weft_workflows', `id = 'p-live'`)).toBe(1);
    // The id can be used again; its claim epoch is not reset by the purge.
    await expect((await e.start('quick', {}, { workflowId: 'p-done' })).result({ timeout: '10s' })).resolves.toBe('done');
    await e.signal(live.workflowId, 'go');
  });

  it('purge(id) takes the ended children with their parent: the id started again runs its own child, and a live descendant refuses it', async () => {
    const e = await env.pool.create({}, (x) =>
      x.register('order', Order).register('item', Item).register('quick', Quick).register('waits', Waits),
    );
    await e.bootstrap();
    await expect((await e.start('order', { tag: 'first' }, { workflowId: 'order-42' })).result({ timeout: '10s' })).resolves.toBe(
      'item done (first)',
    );
    await e.purge('order-42');
    expect(await count('weft_workflows', `id LIKE 'order-42%'`)).toBe(0);
    // The same id again, with the same default child id: a new child that runs, not the old one.
    const again = await e.start('order', { tag: 'second' }, { workflowId: 'order-42' });
    await expect(again.result({ timeout: '10s' })).resolves.toBe('item done (second)');
    // A grandchild still running keeps the whole family.
    await (await e.start('quick', {}, { workflowId: 'fam' })).result({ timeout: '10s' });
    await (await e.start('quick', {}, { workflowId: 'fam/c', parentId: 'fam' })).result({ timeout: '10s' });
    const grandchild = await e.start('waits', {}, { workflowId: 'fam/c/g', parentId: 'fam/c' });
    await expect(e.purge('fam')).rejects.toMatchObject({ code: 'WEFT_PURGE_REFUSED', reason: 'live-children' });
    expect(await count('weft_workflows', `id LIKE 'fam%'`)).toBe(3);
    await e.signal(grandchild.workflowId, 'go');
    await grandchild.result({ timeout: '10s' });
    await e.purge('fam');
    expect(await count('weft_workflows', `id LIKE 'fam%'`)).toBe(0);
  });

  it("retention sweeps a parent with its children, whatever the children's own ages: the id started again meets none of them", async () => {
    // Background tasks on (a parent hears of its child's end by notification); its retention
    // passes may run beside the ones called here, so the table is checked, not the counts.
    const e = await env.pool.create({ retention: { completed: '1h' } }, (x) => x.register('order', Order).register('item', Item));
    await e.bootstrap();
    const h = await e.start('order', { fail: true, tag: 'first' }, { workflowId: 'order-7' });
    await expect(h.result({ timeout: '10s' })).resolves.toBe('child failed (first)');
    expect(await e.handle('order-7/0').status()).toBe('failed'); // 'failed' has no retention here
    await age('order-7', '2 hours');
    await e.runMaintenance();
    expect(await count('weft_workflows', `id LIKE 'order-7%'`)).toBe(0);
    const again = await e.start('order', { tag: 'second' }, { workflowId: 'order-7' });
    await expect(again.result({ timeout: '10s' })).resolves.toBe('item done (second)');
    // A child whose parent is still there is never swept on its own.
    await age('order-7/', '2 hours');
    await e.runMaintenance();
    expect(await count('weft_workflows', `id LIKE 'order-7%'`)).toBe(2);
  });

  it('a child an earlier release left behind its purged parent is started anew when the id is used again', async () => {
    const e = await env.pool.create({}, (x) => x.register('order', Order).register('item', Item));
    await e.bootstrap();
    await (await e.start('order', { tag: 'first' }, { workflowId: 'order-9' })).result({ timeout: '10s' });
    await q(`DELETE FROM ${WF} WHERE id = 'order-9'`); // the parent alone, as purges used to
    const again = await e.start('order', { tag: 'second' }, { workflowId: 'order-9' });
    await expect(again.result({ timeout: '10s' })).resolves.toBe('item done (second)');
  });

  it('refuses bad retention options before anything is written', async () => {
    await expect(env.pool.create({ retention: { completd: '1d' } as never })).rejects.toMatchObject({ code: 'WEFT_INVALID_CONFIGURATION' });
    await expect(env.pool.create({ retention: { completed: 'forever' as Duration } })).rejects.toMatchObject({
      code: 'WEFT_INVALID_DURATION',
    });
  });
});
