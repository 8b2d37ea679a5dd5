// Lock order of the advance statement. A fenced advance takes the claim row (FOR SHARE) before
// the workflow row; an advance that rotates or releases the claim (an external suspend or cancel,
// a terminal commit) must take the claim row first too, or the two deadlock: seen as a flaky
// `deadlock detected` between a body's commit and suspend(). Two real transactions, no mocks.
import pg from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

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
