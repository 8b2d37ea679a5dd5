// Lock order of the advance statement. A fenced advance takes the claim row (FOR SHARE) before
// the workflow row; an advance that rotates or releases the claim (an external suspend or cancel,
// a terminal commit) must take the claim row first too, or the two deadlock: seen as a flaky
// `deadlock detected` between a body's commit and suspend(). Two real transactions, no mocks.
import pg from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';
import { openDatabase } from './data-source.js';
import { WorkflowStore } from './workflow-store.js';

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 5000, workflowClaimRenewInterval: 1000 };

describe('advance lock order (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('suspend() locks the claim before the workflow row, so it cannot deadlock with a fenced writer', async () => {
    const engine = await env.pool.create(WL, (e) => e.register('sleepy', Sleepy));
    await engine.bootstrap();
    const h = await engine.start('sleepy', { ms: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'timer',
    );

    // T1 plays the owner's fenced advance: claim row FOR SHARE first, then the workflow row.
    const t1 = new pg.Client({ connectionString: env.tdb.url });
    t1.on('error', () => undefined);
    await t1.connect();
    try {
      await t1.query('BEGIN');
      await t1.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE workflow_id = $1 FOR SHARE`, [h.workflowId]);
      const suspended = engine.suspend(h.workflowId, 'operator').then(
        () => null,
        (err: unknown) => err,
      );
      // The suspend's statement is now waiting on T1's claim lock.
      await waitFor(
        async () =>
          (
            await env.tdb.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
              [(await t1.query('SELECT pg_backend_pid() AS pid')).rows[0].pid],
            )
          ).length,
        'the suspend to wait for the claim lock',
      );
      // Old order: the suspend already held the workflow row here, and this UPDATE deadlocked.
      const t1Update = await t1.query(`UPDATE weft.weft_workflows SET updated_at = now() WHERE id = $1`, [h.workflowId]).then(
        () => 'updated',
        (err: { code?: string }) => `failed ${err.code}`,
      );
      await t1.query(t1Update === 'updated' ? 'COMMIT' : 'ROLLBACK');
      expect(t1Update).toBe('updated');
      expect(await suspended).toBeNull();
    } finally {
      await t1.end();
    }
    expect((await engine.describe(h.workflowId)).status).toBe('suspended');
  });
});

describe('advance lock order against renewal (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('a batch that releases one claim and fences another locks them in one id-ordered sweep, so renewal cannot deadlock with it', async () => {
    const engine = await env.pool.create({ ...WL, backgroundTasks: 'manual' }, (e) => e.register('sleepy', Sleepy));
    await engine.bootstrap();
    const [a, z] = await Promise.all([
      engine.start('sleepy', { ms: 60_000 }, { workflowId: 'lock-a' }),
      engine.start('sleepy', { ms: 60_000 }, { workflowId: 'lock-z' }),
    ]);
    await waitFor(async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE kind = 'sleep'`)).length === 2, 'both parked');
    await engine.dispose(); // nothing of the engine's own runs from here: the test drives the statement
    const rows = await env.tdb.query<{ id: string; version: number; epoch: string; engine_id: string }>(
      `SELECT w.id, w.version, c.epoch::text AS epoch, c.engine_id FROM weft.weft_workflows w
         JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id WHERE w.id = ANY($1) ORDER BY w.id`,
      [[a.workflowId, z.workflowId]],
    );
    // Claims are released by dispose(); hold them again as the engine did, at a new epoch.
    await env.tdb.query(
      `UPDATE weft.weft_workflow_claims SET engine_id = 'E', epoch = epoch + 1, expires_at = now() + interval '1 hour' WHERE workflow_id = ANY($1)`,
      [[a.workflowId, z.workflowId]],
    );
    const epoch = (id: string) => String(Number(rows.find((r) => r.id === id)!.epoch) + 1);
    const version = (id: string) => rows.find((r) => r.id === id)!.version;

    // T1 plays the renewal: claim rows FOR NO KEY UPDATE in id order, 'lock-a' first.
    const t1 = new pg.Client({ connectionString: env.tdb.url });
    t1.on('error', () => undefined);
    await t1.connect();
    const db = await openDatabase({ database: { url: env.tdb.url, poolSize: 2 }, schema: 'weft' });
    try {
      await t1.query('BEGIN');
      await t1.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE workflow_id = 'lock-a' FOR NO KEY UPDATE`);
      const advanced = new WorkflowStore(db.sql, 'weft').workflows.advanceMany([
        { workflowId: 'lock-a', expectedVersion: version('lock-a'), fence: { engineId: 'E', epoch: epoch('lock-a') } },
        {
          workflowId: 'lock-z',
          expectedVersion: version('lock-z'),
          status: 'completed',
          completed: true,
          fence: { engineId: 'E', epoch: epoch('lock-z') },
          release: true,
        },
      ]);
      await waitFor(
        async () =>
          (
            await env.tdb.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
              [(await t1.query('SELECT pg_backend_pid() AS pid')).rows[0].pid],
            )
          ).length,
        'the advance to wait for the claim T1 holds',
      );
      // The renewal goes on to the next claim in id order; the advance must not hold it already.
      const second = await t1.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE workflow_id = 'lock-z' FOR NO KEY UPDATE`).then(
        () => 'locked',
        (err: { code?: string }) => `failed ${err.code}`,
      );
      await t1.query(second === 'locked' ? 'COMMIT' : 'ROLLBACK');
      expect(second).toBe('locked');
      expect((await advanced).map((o) => o.ok)).toEqual([true, true]);
    } finally {
      await t1.end();
      await db.close();
    }
  });
});
