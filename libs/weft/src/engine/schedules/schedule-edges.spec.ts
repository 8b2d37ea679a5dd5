import { Client } from 'pg';
import { quietLogger, useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import { WeftEngine } from '../engine.js';
import { WeftTestEnvironment } from '../../testing/environment.js';

/** Records each run, so a run executed twice would show twice. */
class Ledgered {
  static query: (sql: string, params?: unknown[]) => Promise<unknown>;
  async run(ctx: WorkflowContext) {
    await ctx.step('ledger', () => Ledgered.query(`INSERT INTO edge_ledger (workflow_id) VALUES ($1)`, [ctx.workflowId]));
    return 'ok';
  }
}

/** Runs until it is signalled. */
class Blocking {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('finish');
    return 'done';
  }
}

const manual = { backgroundTasks: 'manual' as const };

/** Issue #32, the schedules part: each test names its item. */
describe('schedules at the edges (real PostgreSQL)', () => {
  const env = useTestEngines();
  beforeAll(async () => {
    await env.tdb.query(`CREATE TABLE edge_ledger (workflow_id text NOT NULL)`);
    Ledgered.query = (sql, params) => env.tdb.query(sql, params);
  });
  afterEach(async () => env.tdb.query(`DELETE FROM weft.weft_schedules`).catch(() => undefined));
  const fires = async (prefix: string) =>
    (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM edge_ledger WHERE workflow_id LIKE $1`, [`${prefix}@%`]))[0].n;
  const statuses = async (prefix: string) =>
    (
      await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id LIKE $1 ORDER BY status`, [`${prefix}@%`])
    ).map((r) => r.status);
  const engine = (opts: Parameters<typeof WeftEngine.create>[0]) =>
    WeftEngine.create({ schema: 'weft', logger: quietLogger(), timerPollInterval: 50, shutdownGracePeriod: 0, ...opts });

  it("item 8: a trigger made where the type is not run goes through the type's queue when an engine starts it", async () => {
    const queues = { one: { concurrency: 1 } };
    const runner = await env.pool.create({ ...manual, queues }, (e) =>
      e.register({ name: 'q-blocking', factory: () => new Blocking(), queue: 'one' }),
    );
    await runner.bootstrap();
    const api = await env.pool.create({ ...manual, queues }); // runs no workflow type: an API-only service, the CLI
    await api.bootstrap();
    await api.schedules.create({ id: 'qd', workflowType: 'q-blocking', cron: '0 0 1 1 *' });
    const ids = new Set<string>();
    while (ids.size < 3) ids.add((await api.schedules.trigger('qd')).workflowId);
    expect((await api.schedules.describe('qd')).recentRuns.map((r) => r.outcome)).toEqual(['triggered', 'triggered', 'triggered']);
    await runner.runMaintenance(); // the fire pass starts the triggered runs; admission puts one in the queue's slot
    await runner.runMaintenance();
    expect(await statuses('qd')).toEqual(['enqueued', 'enqueued', 'running']);
    expect((await api.schedules.describe('qd')).recentRuns.map((r) => r.status).sort()).toEqual(['enqueued', 'enqueued', 'running']);
  });

  it('item 9: concurrent triggers at a small pool all succeed; poolSize 2 fires; poolSize 1 is refused', async () => {
    const small = await engine({ database: { url: env.tdb.url, poolSize: 3 } });
    try {
      small.register('ledgered', Ledgered);
      await small.bootstrap();
      await small.schedules.create({ id: 'burst', workflowType: 'ledgered', cron: '0 0 1 1 *' });
      const results = await Promise.allSettled(Array.from({ length: 12 }, () => small.schedules.trigger('burst')));
      expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
      await waitFor(async () => (await statuses('burst')).every((s) => s === 'completed'), 'the triggered runs');
    } finally {
      await small.dispose();
    }

    const two = await engine({ database: { url: env.tdb.url, poolSize: 2 } });
    try {
      two.register('ledgered', Ledgered);
      await two.bootstrap();
      await two.schedules.create({ id: 'two', workflowType: 'ledgered', every: '1s' });
      await waitFor(async () => (await fires('two')) >= 2, 'two fires at poolSize 2', 15_000);
      const { workflowId } = await two.schedules.trigger('two');
      await expect(two.result(workflowId, { timeout: '10s' })).resolves.toBe('ok');
    } finally {
      await two.dispose();
    }

    for (const poolSize of [1, 0, 2.5]) {
      await expect(engine({ database: { url: env.tdb.url, poolSize } })).rejects.toMatchObject({
        code: 'WEFT_INVALID_CONFIGURATION',
        message: expect.stringMatching(/database\.poolSize.*must be an integer from 2 to 1000/),
      });
    }
  });

  it('item 10: update with a new cron keeps the time zone', async () => {
    const e = await env.pool.create(manual, (x) => x.register('ledgered', Ledgered));
    await e.bootstrap();
    await e.schedules.create({ id: 'tokyo', workflowType: 'ledgered', cron: '0 3 * * *', timezone: 'Asia/Tokyo' });
    const d = await e.schedules.update('tokyo', { cron: '0 4 * * *' });
    expect(d).toMatchObject({ cron: '0 4 * * *', timezone: 'Asia/Tokyo' });
    expect(d.nextFireTimes.map((t) => t.toISOString().slice(11))).toEqual(Array(5).fill('19:00:00.000Z')); // 04:00 JST
    expect((await e.schedules.update('tokyo', { cron: '0 5 * * *', timezone: 'UTC' })).timezone).toBe('UTC');
  });

  it('item 11: a fire the pass reaches within one pass interval starts, even with a shorter catch-up window', async () => {
    const e = await env.pool.create({ ...manual, timerPollInterval: '2s' }, (x) => x.register('ledgered', Ledgered));
    await e.bootstrap();
    await e.schedules.create({ id: 'tight', workflowType: 'ledgered', every: '1s', catchupWindow: '1s', overlap: 'allow-all' });
    // Two fires due: the last full second (0–1 s late) and the one before (1–2 s late): both inside one 2 s pass interval.
    await env.tdb.query(`UPDATE weft.weft_schedules SET next_fire_at = date_trunc('second', clock_timestamp()) - interval '1 second'`);
    expect((await e.runMaintenance()).schedulesFired).toBe(2);
    const runs = (await e.schedules.describe('tight')).recentRuns;
    expect(runs.map((r) => r.outcome)).toEqual(['started', 'caught-up']);
    await expect(e.schedules.create({ id: 'zero', workflowType: 'ledgered', every: '1s', catchupWindow: 0 })).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
    });
  });

  it('item 11, end to end: on-time fires of a 1 s window with a 2 s pass are never recorded missed', async () => {
    const e = await env.pool.create({ timerPollInterval: '2s' }, (x) => x.register('ledgered', Ledgered));
    await e.bootstrap();
    await e.schedules.create({ id: 'ontime', workflowType: 'ledgered', every: '1s', catchupWindow: '1s', overlap: 'allow-all' });
    await waitFor(async () => (await fires('ontime')) >= 4, '4 fires', 20_000);
    expect((await e.schedules.describe('ontime')).recentRuns.filter((r) => r.outcome === 'missed')).toEqual([]);
  });

  it('item 15: broken schedules are logged once each, move on, and do not starve the others', async () => {
    const logger = quietLogger();
    // On the testing kit: its clock brings the healthy schedule's fires (the same fire pass the
    // timer loop runs) instead of three real seconds.
    const kit = await WeftTestEnvironment.create({ workflows: [['ledgered', Ledgered]], engine: { logger } });
    const db = new Client({ connectionString: kit.databaseUrl });
    try {
      await db.connect();
      // Rows an older version accepted: ids with a control character, whose fire ids are invalid workflow ids.
      await db.query(
        `INSERT INTO "${kit.schema}".weft_schedules (id, workflow_type, every_ms, overlap, next_fire_at)
         SELECT 'broken' || chr(7) || g, 'ledgered', 1000, 'allow-all', now() - interval '1 minute' FROM generate_series(1, 50) g`,
      );
      await kit.engine.schedules.create({ id: 'healthy', workflowType: 'ledgered', every: '1s' });
      await kit.clock.advance('3s');
      expect(await fires('healthy')).toBeGreaterThanOrEqual(3);
      const broken = logger.lines.filter((l) => l.includes('could not fire'));
      expect(broken.length).toBeGreaterThanOrEqual(50);
      expect(broken.length).toBeLessThanOrEqual(50); // once each: the next attempt is a back-off away
      expect(broken.some((l) => l.includes('\u0007'))).toBe(false);
      expect(broken[0]).toMatch(/Schedule "broken\\u0007\d+" could not fire/);
      const d = await kit.engine.schedules.describe('broken\u00071');
      expect(d.recentRuns[0].outcome).toBe('failed');
      expect(d.nextFireTimes[0].getTime()).toBeGreaterThan(kit.clock.now().getTime() + 30_000);
      await expect(kit.engine.schedules.create({ id: 'bad\u0007', workflowType: 'ledgered', every: '1s' })).rejects.toMatchObject({
        code: 'WEFT_INVALID_ARGUMENT',
      });
      await kit.engine.schedules.delete('broken\u00071'); // an existing broken row can still be removed
    } finally {
      await db.end().catch(() => undefined);
      await kit.close();
    }
  });

  it('item 15: two fire passes at once (the timer loop and the testing kit) try a broken schedule once', async () => {
    const logger = quietLogger();
    const e = await env.pool.create({ ...manual, logger }, (x) => x.register('ledgered', Ledgered));
    await e.bootstrap();
    await env.tdb.query(
      `INSERT INTO weft.weft_schedules (id, workflow_type, every_ms, overlap, next_fire_at)
       SELECT 'broken' || chr(7) || g, 'ledgered', 1000, 'allow-all', now() - interval '1 minute' FROM generate_series(1, 5) g`,
    );
    await Promise.all([e.fireDue(), e.fireDue()]);
    expect(logger.lines.filter((l) => l.includes('could not fire'))).toHaveLength(5);
  });

  it('item 14: misspelt options are refused by create, update and declared schedules', async () => {
    const e = await env.pool.create(manual, (x) => x.register('ledgered', Ledgered));
    await e.bootstrap();
    const bad = { id: 'typo', workflowType: 'ledgered', cron: '0 3 * * *', timeZone: 'Asia/Tokyo' };
    await expect(e.schedules.create(bad as never)).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
      message: expect.stringContaining('unknown option "timeZone"'),
    });
    expect(await env.tdb.query(`SELECT id FROM weft.weft_schedules WHERE id = 'typo'`)).toEqual([]);
    await e.schedules.create({ id: 'typo', workflowType: 'ledgered', every: '1h' });
    await expect(e.schedules.update('typo', { evry: '2h' } as never)).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
      message: expect.stringContaining('unknown option "evry"'),
    });
    expect(() =>
      e.register({ name: 'declared-typo', factory: () => new Ledgered(), schedules: [{ id: 'd', every: '1m', overLap: 'skip' } as never] }),
    ).toThrow(/unknown option "overLap"/);
  });

  it('a declared schedule no code declares any more is paused at bootstrap, with a warning; API schedules stay', async () => {
    const declaring = await env.pool.create(manual, (x) =>
      x.register({ name: 'ledgered', factory: () => new Ledgered(), schedules: [{ id: 'gone', every: '1h' }] }),
    );
    await declaring.bootstrap();
    await declaring.schedules.create({ id: 'kept', workflowType: 'ledgered', every: '1h', catchupWindow: '2h' });
    const otherType = await env.pool.create(manual, (x) => x.register('blocking', Blocking)); // runs another type: not its schedule
    await otherType.bootstrap();
    expect((await otherType.schedules.describe('gone')).paused).toBe(false);

    const logger = quietLogger();
    const redeployed = await env.pool.create({ ...manual, logger }, (x) => x.register({ name: 'ledgered', factory: () => new Ledgered() }));
    await redeployed.bootstrap();
    expect((await redeployed.schedules.describe('gone')).paused).toBe(true);
    expect((await redeployed.schedules.describe('kept')).paused).toBe(false);
    expect(logger.lines.filter((l) => l.includes('no longer declared'))).toEqual([
      expect.stringContaining('Schedule "gone" of "ledgered" is no longer declared by a @Schedule: paused'),
    ]);
    await env.tdb.query(`UPDATE weft.weft_schedules SET next_fire_at = date_trunc('hour', now())`); // both due, inside the window
    expect((await redeployed.runMaintenance()).schedulesFired).toBe(1); // 'kept' only
  });
});
