// Lock order of the advance statement against the claim's other writers. A fenced advance locks
// only the workflow row (its fence is the row's fence_epoch, docs/decisions/0008); a claim handover
// locks the claim row and then the workflow row; an advance that rotates or releases the claim (an
// external suspend or cancel, a terminal commit) must take the claim row first too, or the two
// deadlock: seen as a flaky `deadlock detected` between a body's commit and suspend(). Real
// transactions, no mocks.
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

    // T1 plays a claim handover: the claim row first, then the workflow row.
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

describe('advance lock order against renewal and takeover (real PostgreSQL)', () => {
  const env = useTestEngines();

  /** Two parked workflows, their engine gone, held again by 'E' at a new epoch (claim row and fence_epoch, as a takeover writes them). */
  async function parkedPair() {
    const engine = await env.pool.create({ ...WL, backgroundTasks: 'manual' }, (e) => e.register('sleepy', Sleepy));
    await engine.bootstrap();
    const [a, z] = await Promise.all([
      engine.start('sleepy', { ms: 60_000 }, { workflowId: 'lock-a' }),
      engine.start('sleepy', { ms: 60_000 }, { workflowId: 'lock-z' }),
    ]);
    await waitFor(async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE kind = 'sleep'`)).length === 2, 'both parked');
    await engine.dispose(); // nothing of the engine's own runs from here: the test drives the statements
    const ids = [a.workflowId, z.workflowId];
    await env.tdb.query(
      `WITH c AS (UPDATE weft.weft_workflow_claims SET engine_id = 'E', epoch = epoch + 1, expires_at = now() + interval '1 hour'
                  WHERE workflow_id = ANY($1) RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [ids],
    );
    const rows = await env.tdb.query<{ id: string; version: number; epoch: string }>(
      `SELECT w.id, w.version, c.epoch::text AS epoch FROM weft.weft_workflows w
         JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id WHERE w.id = ANY($1) ORDER BY w.id`,
      [ids],
    );
    const of = (id: string) => rows.find((r) => r.id === id)!;
    return { epoch: (id: string) => of(id).epoch, version: (id: string) => of(id).version };
  }

  async function client(): Promise<pg.Client> {
    const c = new pg.Client({ connectionString: env.tdb.url });
    c.on('error', () => undefined);
    await c.connect();
    return c;
  }

  const waitingOnLock = async (other: pg.Client) =>
    (
      await env.tdb.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`, [
        (await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid,
      ])
    ).length > 0;

  it('a fenced advance locks no claim row, and a batch that also releases one locks only that one, so a renewal cannot hold it up or deadlock with it', async () => {
    const { epoch, version } = await parkedPair();
    // T1 plays the renewal: claim rows FOR NO KEY UPDATE in id order, 'lock-a' first.
    const t1 = await client();
    const db = await openDatabase({ database: { url: env.tdb.url, poolSize: 2 }, schema: 'weft' });
    try {
      await t1.query('BEGIN');
      await t1.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE workflow_id = 'lock-a' FOR NO KEY UPDATE`);
      // While T1 holds lock-a's claim row, the advance fences lock-a and releases lock-z's claim.
      const outcomes = await new WorkflowStore(db.sql, 'weft').workflows.advanceMany([
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
      expect(outcomes.map((o) => o.ok)).toEqual([true, true]);
      // The renewal goes on to the next claim in id order: free, the advance has committed.
      await t1.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE workflow_id = 'lock-z' FOR NO KEY UPDATE`);
      await t1.query('COMMIT');
    } finally {
      await t1.end();
      await db.close();
    }
    const z = await env.tdb.query(`SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = 'lock-z'`);
    expect(z[0].engine_id).toBeNull();
  });

  it('a takeover that commits while a fenced advance waits for the workflow row refuses the advance, and one the advance waited for sees its write', async () => {
    const { epoch, version } = await parkedPair();
    const t1 = await client();
    const db = await openDatabase({ database: { url: env.tdb.url, poolSize: 2 }, schema: 'weft' });
    const workflows = new WorkflowStore(db.sql, 'weft').workflows;
    const takeover = `WITH c AS (UPDATE weft.weft_workflow_claims SET engine_id = 'F', epoch = epoch + 1 WHERE workflow_id = $1
                                 RETURNING workflow_id, epoch)
                      UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`;
    try {
      // Takeover first: the advance waits on the row T1 locked, then re-checks its latest version.
      await t1.query('BEGIN');
      await t1.query(takeover, ['lock-a']);
      const refused = workflows.advanceMany([
        { workflowId: 'lock-a', expectedVersion: version('lock-a'), fence: { engineId: 'E', epoch: epoch('lock-a') } },
      ]);
      await waitFor(() => waitingOnLock(t1), 'the advance to wait for the row the takeover locked');
      await t1.query('COMMIT');
      expect((await refused)[0].ok).toBe(false);

      // Advance first (held open by T2's transaction): the takeover waits, then its holder reads the write.
      const t2 = await client();
      try {
        await t2.query('BEGIN');
        const [{ version: v }] = (
          await t2.query(
            `UPDATE weft.weft_workflows SET version = version + 1 WHERE id = 'lock-z' AND fence_epoch = $1 RETURNING version`,
            [epoch('lock-z')],
          )
        ).rows;
        const taking = t1.query(takeover, ['lock-z']);
        await waitFor(() => waitingOnLock(t2), 'the takeover to wait for the advance');
        await t2.query('COMMIT');
        await taking;
        expect(v).toBe(version('lock-z') + 1);
      } finally {
        await t2.end();
      }
    } finally {
      await t1.end();
      await db.close();
    }
    const rows = await env.tdb.query<{ id: string; version: number; fence_epoch: string; epoch: string }>(
      `SELECT w.id, w.version, w.fence_epoch::text AS fence_epoch, c.epoch::text AS epoch FROM weft.weft_workflows w
         JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id ORDER BY w.id`,
    );
    expect(rows).toEqual([
      {
        id: 'lock-a',
        version: version('lock-a'),
        fence_epoch: String(Number(epoch('lock-a')) + 1),
        epoch: String(Number(epoch('lock-a')) + 1),
      },
      {
        id: 'lock-z',
        version: version('lock-z') + 1,
        fence_epoch: String(Number(epoch('lock-z')) + 1),
        epoch: String(Number(epoch('lock-z')) + 1),
      },
    ]);
  });
});
