import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { FencedPolicy } from './fenced-policy.js';
import { nextSlotDelay } from './renewal-scheduler.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };

describe('ClaimRenewalScheduler (real PostgreSQL)', () => {
  const env = useTestEngines();

  const expiresAt = async (id: string) =>
    (
      await env.tdb.query<{ ms: string }>(
        `SELECT (extract(epoch FROM expires_at) * 1000)::bigint AS ms FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
        [id],
      )
    )[0].ms;

  it('renews every held claim, running or parked, in ONE statement per pass', async () => {
    const e = await env.pool.create({ ...WL, engineId: 'R1', backgroundTasks: 'manual' }, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    const hs = await Promise.all(Array.from({ length: 30 }, () => e.start('sleepy', { ms: 60_000 })));
    await waitFor(async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE kind = 'sleep'`)).length === 30, 'all parked');
    const before = await expiresAt(hs[0].workflowId);
    const calls: string[] = [];
    // Renewal has its own connection; the env.pool must not see it.
    const sql = (e.ownership as unknown as FencedPolicy).renewalSql;
    const original = sql.query.bind(sql);
    sql.query = ((text: string, params?: unknown[]) => {
      calls.push(text);
      return original(text, params);
    }) as typeof sql.query;
    const { pass } = await e.runMaintenance();
    sql.query = original;
    expect(pass?.renewed).toBe(30);
    expect(
      calls.filter((c) => c.includes('unnest($2::text[], $3::bigint[])') && c.includes('expires_at = clock_timestamp()')),
    ).toHaveLength(1);
    expect(Number(await expiresAt(hs[0].workflowId))).toBeGreaterThan(Number(before));
  });

  it('keeps renewing on its own connection while every pooled connection is busy past the TTL', async () => {
    const e = await env.pool.create({ ...WL, engineId: 'P1' }, (x) => x.register('sleepy-busy', Sleepy));
    await e.bootstrap();
    const h = await e.start('sleepy-busy', { ms: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'parked',
    );
    const pg = e.database.sql.pool;
    // Every connection the env.pool can still hand out (LISTEN keeps one checked out for good).
    const free = pg.options.max - (pg.totalCount - pg.idleCount);
    const busy = await Promise.all(Array.from({ length: free }, () => pg.connect()));
    expect(pg.totalCount).toBe(pg.options.max);
    try {
      const first = Number(await expiresAt(h.workflowId));
      // Past a TTL and more with no pooled connection free: only the dedicated connection can renew.
      // Waited for, not slept on: a loaded machine's renewals come late, not never.
      await waitFor(async () => Number(await expiresAt(h.workflowId)) - first >= 1_500, 'the claim renewed 1.5 s on', 10_000, 100);
      expect(e.ownership.claims.registry!.isValid(h.workflowId)).toBe(true);
    } finally {
      busy.forEach((c) => c.release());
    }
    const [claim] = await env.tdb.query<{ engine_id: string }>(`SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = $1`, [
      h.workflowId,
    ]);
    expect(claim.engine_id).toBe('P1');
  });

  it('a timer taken by an engine that then stops comes back once its claim has moved, not 30 s later', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'T1', backgroundTasks: 'manual' }, (x) => x.register('sleepy-timer', Sleepy));
    await a.bootstrap();
    const h = await a.start('sleepy-timer', { ms: 100 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'parked',
    );
    await new Promise((r) => setTimeout(r, 150));
    // T1 takes the due timer, then never wakes the workflow (as if it died right there).
    (a as unknown as { runtime: { drive: () => Promise<void> } }).runtime.drive = async () => undefined;
    const report = await a.runMaintenance();
    expect(report.timersFired).toBe(1);
    const [taken] = await env.tdb.query<{ ahead_ms: number }>(
      `SELECT extract(epoch FROM fire_at - now()) * 1000 AS ahead_ms FROM weft.weft_timers WHERE workflow_id = $1`,
      [h.workflowId],
    );
    // TTL 900 + grace 600 + renew 300: pushed no further than the claim takeover.
    expect(Number(taken.ahead_ms)).toBeLessThanOrEqual(1_800);
    const b = await env.pool.create({ ...WL, engineId: 'T2', timerPollInterval: 50 }, (x) => x.register('sleepy-timer', Sleepy));
    await b.bootstrap();
    await waitFor(async () => (await h.status()) === 'completed', 'completed on T2', 8_000);
    const [claim] = await env.tdb.query<{ engine_id: string | null; epoch: string }>(
      `SELECT engine_id, epoch::text AS epoch FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
      [h.workflowId],
    );
    expect(claim.epoch).toBe('2'); // T1 at 1, T2 took it over at 2
  });

  it('manual mode: nothing happens until runMaintenance(); then exactly one pass', async () => {
    // Its own type, so the workflows other tests left are not recovered here.
    const e = await env.pool.create({ ...WL, engineId: 'M1', backgroundTasks: 'manual', timerPollInterval: 20 }, (x) =>
      x.register('sleepy-manual', Sleepy),
    );
    await e.bootstrap();
    const h = await e.start('sleepy-manual', { ms: 50 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'timer written',
    );
    const claimedExpiry = await expiresAt(h.workflowId);
    // Several would-be intervals pass: no timer fires, no renewal happens.
    await new Promise((r) => setTimeout(r, 700));
    expect(await h.status()).toBe('running');
    expect(await expiresAt(h.workflowId)).toBe(claimedExpiry);
    expect(e.healthSnapshot().lastBackgroundPassAt).toBeNull();
    const report = await e.runMaintenance();
    expect(report.pass).toMatchObject({ renewed: 1, lost: [] });
    expect(report.timersFired).toBe(1);
    await expect(h.result({ timeout: '5s' })).resolves.toBe('woke');
    expect(e.healthSnapshot().lastBackgroundPassAt).not.toBeNull();
  });

  it('dispose during a reclaim pass leaves no claim held by the disposed engine', async () => {
    // 300 orphans: running workflows whose holder "X" expired long ago.
    await env.tdb.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input) SELECT 'orphan-' || g, 'sleepy', 'running', '{"ms": 60000}' FROM generate_series(1, 300) g`,
    );
    await env.tdb.query(
      `INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at)
       SELECT id, 7, 'X', now() - interval '1 hour', now() - interval '2 hours' FROM weft.weft_workflows WHERE id LIKE 'orphan-%'`,
    );
    const e = await env.pool.create({ ...WL, engineId: 'D1' }, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE engine_id = 'D1' LIMIT 1`)).length,
      'reclaim under way',
    );
    const report = await e.dispose();
    expect(report.failed).toBe(0);
    const held = await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflow_claims WHERE engine_id = 'D1'`);
    expect(held[0].n).toBe(0);
    expect(await e.dispose()).toEqual(report); // safe to call twice
    const epochs = await env.tdb.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM weft.weft_workflow_claims WHERE workflow_id LIKE 'orphan-%' AND epoch < 7`,
    );
    expect(epochs[0].n).toBe(0);
  });
});

describe('maintenance slots', () => {
  it('every engine lands on the same wall-clock slot, within 10 ms', () => {
    for (const interval of [500, 3_000]) {
      for (const now of [1_000_000, 1_000_001, 1_000_499, 1_234_567]) {
        const delay = nextSlotDelay(interval, now);
        expect(delay).toBeGreaterThan(0);
        expect(delay).toBeLessThanOrEqual(interval + 10);
        expect((now + delay) % interval).toBeLessThan(10);
      }
    }
  });
});
