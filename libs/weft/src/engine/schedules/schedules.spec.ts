import { useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Records each run in a ledger table, so a run executed twice would show twice. */
class Ledgered {
  static query: (sql: string, params?: unknown[]) => Promise<unknown>;
  async run(ctx: WorkflowContext, input: { tag?: string } | null) {
    await ctx.step('ledger', () =>
      Ledgered.query(`INSERT INTO sched_ledger (workflow_id, tag) VALUES ($1, $2)`, [ctx.workflowId, input?.tag ?? null]),
    );
    return 'ok';
  }
}

/** Runs until it is signalled: the previous run is still running when the next fire comes. */
class Blocking {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('finish');
    return 'done';
  }
}

const manual = { backgroundTasks: 'manual' as const };
const register = (e: WeftEngine) => e.register('ledgered', Ledgered).register('blocking', Blocking);

describe('schedules (real PostgreSQL)', () => {
  const env = useTestEngines();
  beforeAll(async () => {
    await env.tdb.query(`CREATE TABLE sched_ledger (workflow_id text NOT NULL, tag text)`);
    Ledgered.query = (sql, params) => env.tdb.query(sql, params);
  });
  // Each test's schedules would otherwise fire in the next test's engines.
  afterEach(async () => env.tdb.query(`DELETE FROM weft.weft_schedules`).catch(() => undefined));
  const ledger = async (prefix: string) =>
    env.tdb.query<{ workflow_id: string; n: number }>(
      `SELECT workflow_id, count(*)::int AS n FROM sched_ledger WHERE workflow_id LIKE $1 GROUP BY workflow_id ORDER BY workflow_id`,
      [`${prefix}@%`],
    );
  const pastDue = (id: string, ago: string) =>
    env.tdb.query(`UPDATE weft.weft_schedules SET next_fire_at = now() - $2::interval WHERE id = $1`, [id, ago]);

  it('two engines racing over an every-1s schedule start each fire time exactly once, with no gap', async () => {
    const [a, b] = await Promise.all([env.pool.create({}, register), env.pool.create({}, register)]);
    await Promise.all([a.bootstrap(), b.bootstrap()]);
    await a.schedules.create({ id: 'tick', workflowType: 'ledgered', every: '1s' });
    const rows = (await waitFor(
      async () => {
        const r = await ledger('tick');
        return r.length >= 4 ? r : null;
      },
      '4 fires',
      15_000,
    ))!;
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const times = rows.map((r) => Date.parse(r.workflow_id.slice('tick@'.length)));
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBe(1000);
    const d = await b.schedules.describe('tick');
    expect(d.recentRuns.length).toBeGreaterThanOrEqual(4);
    expect(d.recentRuns[0].outcome).toBe('started');
    expect(d.nextFireTimes).toHaveLength(5);
  });

  it('catch-up: fires inside catchupWindow start (latest last), older ones are missed, then it runs on time', async () => {
    const e = await env.pool.create(manual, register);
    await e.bootstrap();
    // allow-all: every due fire starts (under 'skip' the first caught-up run would skip the rest).
    await e.schedules.create({ id: 'catch', workflowType: 'ledgered', every: '1s', catchupWindow: '2500ms', overlap: 'allow-all' });
    await pastDue('catch', '6 seconds');
    const { schedulesFired } = await e.runMaintenance();
    expect(schedulesFired === 2 || schedulesFired === 3).toBe(true);
    const d = await e.schedules.describe('catch');
    const outcomes = d.recentRuns.map((r) => r.outcome);
    expect(outcomes[0]).toBe('started');
    expect(outcomes.slice(1, schedulesFired)).toEqual(Array(schedulesFired - 1).fill('caught-up'));
    expect(outcomes[schedulesFired]).toBe('missed');
    expect(d.nextFireTimes[0].getTime()).toBeGreaterThan(Date.now() - 1000);
    await waitFor(async () => (await ledger('catch')).length === schedulesFired, 'the caught-up runs');
    // Run again: the fires already started start nothing twice (a fire that fell due since, if the
    // machine was slow, is a new one).
    const again = (await e.runMaintenance()).schedulesFired;
    expect(again).toBeLessThanOrEqual(1);
    await waitFor(async () => (await ledger('catch')).length === schedulesFired + again, 'the runs');
    expect((await ledger('catch')).every((r) => r.n === 1)).toBe(true);
  });

  it("overlap 'skip' skips while the previous run runs; 'allow-all' starts every fire", async () => {
    const e = await env.pool.create(manual, register);
    await e.bootstrap();
    await e.schedules.create({ id: 'skipper', workflowType: 'blocking', every: '1s', catchupWindow: '10s' });
    await e.schedules.create({ id: 'all', workflowType: 'blocking', every: '1s', catchupWindow: '10s', overlap: 'allow-all' });
    await pastDue('skipper', '3 seconds');
    await pastDue('all', '3 seconds');
    await e.runMaintenance();
    const skipper = await e.schedules.describe('skipper');
    expect(skipper.recentRuns.filter((r) => r.outcome !== 'skipped').map((r) => r.status)).toEqual(['running']);
    expect(skipper.recentRuns.filter((r) => r.outcome === 'skipped').length).toBeGreaterThanOrEqual(2);
    const all = await e.schedules.describe('all');
    expect(all.recentRuns.filter((r) => r.status === 'running').length).toBeGreaterThanOrEqual(3);
  });

  it("overlap 'buffer-one' starts the held fire when the running one ends; 'cancel-other' cancels it", async () => {
    const e = await env.pool.create(manual, register);
    await e.bootstrap();
    await e.schedules.create({ id: 'buf', workflowType: 'blocking', every: '1s', catchupWindow: '10s', overlap: 'buffer-one' });
    await e.schedules.create({ id: 'cxl', workflowType: 'blocking', every: '1s', catchupWindow: '10s', overlap: 'cancel-other' });
    await pastDue('buf', '3 seconds');
    await pastDue('cxl', '3 seconds');
    await e.runMaintenance();
    const buf = await e.schedules.describe('buf');
    expect(buf.bufferedFireAt).not.toBeNull();
    const first = buf.recentRuns.find((r) => r.status === 'running')!;
    await e.signal(first.workflowId, 'finish');
    await e.result(first.workflowId, { timeout: '10s' });
    await e.runMaintenance();
    const after = await e.schedules.describe('buf');
    expect(after.bufferedFireAt === null || after.bufferedFireAt > buf.bufferedFireAt!).toBe(true);
    expect(after.recentRuns.find((r) => r.workflowId.endsWith(buf.bufferedFireAt!.toISOString()))?.status).toBe('running');

    // A cancel is a request the owner applies: a fire of the second pass (a second went by while
    // 'buf' ended) may have cancelled its predecessor a moment ago.
    const statuses = (await waitFor(async () => {
      const s = (await e.schedules.describe('cxl')).recentRuns.map((r) => r.status);
      return s.slice(1).every((x) => x === 'cancelled') ? s : null;
    }, "the earlier fires' runs cancelled"))!;
    expect(statuses[0]).toBe('running');
    expect(statuses.length).toBeGreaterThanOrEqual(3);
  });

  it('pause, unpause, trigger, update, list, delete; typed errors', async () => {
    const e = await env.pool.create(manual, register);
    await e.bootstrap();
    const created = await e.schedules.create({
      id: 'ops',
      workflowType: 'ledgered',
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      input: { tag: 'x' },
    });
    expect(created).toMatchObject({ cron: '0 3 * * *', timezone: 'Europe/Berlin', paused: false, source: 'api', overlap: 'skip' });
    await expect(e.schedules.create({ id: 'ops', workflowType: 'ledgered', every: '1s' })).rejects.toMatchObject({
      code: 'WEFT_SCHEDULE_ALREADY_EXISTS',
    });
    const { workflowId } = await e.schedules.trigger('ops');
    await expect(e.result(workflowId, { timeout: '10s' })).resolves.toBe('ok');
    expect((await e.schedules.describe('ops')).recentRuns[0]).toMatchObject({ workflowId, outcome: 'triggered', status: 'completed' });
    expect(await env.tdb.query(`SELECT tag FROM sched_ledger WHERE workflow_id = $1`, [workflowId])).toEqual([{ tag: 'x' }]);

    expect((await e.schedules.pause('ops')).nextFireTimes).toEqual([]);
    await pastDue('ops', '1 minute');
    expect((await e.runMaintenance()).schedulesFired).toBe(0); // paused: nothing fires
    const unpaused = await e.schedules.unpause('ops');
    expect(unpaused.paused).toBe(false);
    expect(unpaused.nextFireTimes[0].getTime()).toBeGreaterThan(Date.now()); // no catch-up of the paused time

    const updated = await e.schedules.update('ops', { every: '1h' });
    expect(updated).toMatchObject({ cron: null, everyMs: 3_600_000, timezone: null, input: { tag: 'x' } });
    await expect(e.schedules.update('ops', { every: '1h', timezone: 'UTC' })).rejects.toMatchObject({ code: 'WEFT_INVALID_ARGUMENT' });

    expect((await e.schedules.list()).map((s) => s.id)).toContain('ops');
    await e.schedules.delete('ops');
    await expect(e.schedules.describe('ops')).rejects.toMatchObject({ code: 'WEFT_SCHEDULE_NOT_FOUND' });
    await expect(e.schedules.delete('ops')).rejects.toMatchObject({ code: 'WEFT_SCHEDULE_NOT_FOUND' });
    await expect(e.schedules.trigger('ops')).rejects.toMatchObject({ code: 'WEFT_SCHEDULE_NOT_FOUND' });
    await expect(e.schedules.create({ id: 'bad', workflowType: 'ledgered', cron: '61 * * * *' })).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
    });
    expect(await env.tdb.query(`SELECT id FROM weft.weft_schedules WHERE id = 'bad'`)).toEqual([]);
  });

  it('declared schedules: replicas booting together write one row, and an unchanged definition is not rewritten', async () => {
    const declare = (e: WeftEngine) =>
      e.register({
        name: 'declared',
        factory: () => new Ledgered(),
        schedules: [{ id: 'nightly', cron: '0 3 * * *', input: { tag: 'n' } }],
      });
    const engines = await Promise.all([1, 2, 3].map(() => env.pool.create(manual, declare)));
    await Promise.all(engines.map((e) => e.bootstrap()));
    const rows = await env.tdb.query<{ version: number; source: string }>(
      `SELECT version, source FROM weft.weft_schedules WHERE id = 'nightly'`,
    );
    expect(rows).toEqual([{ version: 1, source: 'decorator' }]);
    const again = await env.pool.create(manual, declare);
    await again.bootstrap();
    expect(await env.tdb.query(`SELECT version FROM weft.weft_schedules WHERE id = 'nightly'`)).toEqual([{ version: 1 }]);
    const changed = await env.pool.create(manual, (e) =>
      e.register({ name: 'declared', factory: () => new Ledgered(), schedules: [{ id: 'nightly', cron: '0 4 * * *' }] }),
    );
    await changed.bootstrap();
    expect(await changed.schedules.describe('nightly')).toMatchObject({ cron: '0 4 * * *', input: null });
  });
});
