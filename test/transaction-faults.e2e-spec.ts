import pg from 'pg';
import { PgCluster } from './chaos/cluster.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { Child, fixture, spawnChild } from './support/processes.js';

/**
 * Transactional steps in engine processes (test/fixtures/ledger-workflows.ts): each body writes its
 * row to tx_rows in its transaction and notes in the ledger, outside it, that it ran. Whatever
 * happens to the process or to PostgreSQL, tx_rows holds exactly one row per (workflow, step) and
 * every workflow completes; the ledger shows the bodies that ran more than once.
 */
const query = async <R = Record<string, unknown>>(url: string, sql: string, params: unknown[] = []): Promise<R[]> => {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as R[];
  } finally {
    await c.end().catch(() => undefined);
  }
};
const count = async (url: string, sql: string, params: unknown[] = []) => (await query<{ n: number }>(url, sql, params))[0].n;

/** Every (workflow, seq) of `workflows` workflows of three steps has exactly one row, and every one completed with `output`. */
async function expectExactlyOnce(url: string, prefix: string, workflows: number, output: number): Promise<void> {
  const rows = await query<{ workflow_id: string; seq: number; n: number }>(
    url,
    'SELECT workflow_id, seq, count(*)::int AS n FROM tx_rows WHERE workflow_id LIKE $1 GROUP BY workflow_id, seq',
    [`${prefix}-%`],
  );
  expect(rows).toHaveLength(workflows * 3);
  expect(rows.filter((r) => r.n !== 1)).toEqual([]);
  const ended = await query<{ status: string; output: number }>(url, 'SELECT status, output FROM weft.weft_workflows WHERE id LIKE $1', [
    `${prefix}-%`,
  ]);
  expect(ended).toHaveLength(workflows);
  expect(ended.every((w) => w.status === 'completed' && w.output === output)).toBe(true);
  // One record per step: nothing the bodies wrote twice reached the history twice either.
  expect(await count(url, 'SELECT count(*)::int AS n FROM weft.weft_operations WHERE workflow_id LIKE $1', [`${prefix}-%`])).toBe(
    workflows * 3,
  );
}

/** No transaction of the database is left open (a stopped owner's bodies have ended, one way or the other). */
const noOpenTransactions = (url: string) =>
  count(
    url,
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
  ).then((n) => n === 0);

describe('transactional steps across process and database faults (real processes)', () => {
  const children: Child[] = [];
  const spawn = (env: Record<string, string>) => {
    const c = spawnChild(fixture('engine-child'), { WEFT_SCHEMA: 'weft', ...env });
    children.push(c);
    return c;
  };
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.proc.kill('SIGCONT');
      c.proc.kill('SIGKILL');
      await c.exited;
    }
  });

  describe('on the shared server', () => {
    let tdb: TestDatabase;
    beforeAll(async () => {
      tdb = await createTestDatabase();
    });
    afterAll(async () => {
      await tdb?.drop();
    });

    it('a body error on the first attempt, a serialization failure, then a SIGSTOP of the owner past the TTL while its bodies wait: the takeover finishes the step, the deposed bodies cannot commit', async () => {
      const lease = { DATABASE_URL: tdb.url, OWNERSHIP: 'workflow-lease', CLAIM_TTL_MS: '1500', CLAIM_RENEW_MS: '500' };
      const a = spawn({ ...lease, WEFT_ENGINE_ID: 'A', START_TYPE: 'tx-faults', START_COUNT: '10', STEP_MS: '4000', ID_PREFIX: 'stop' });
      await a.waitEvent('started');
      // Every workflow is in its third body, written and waiting (2 to 6 s) to commit.
      await waitFor(
        async () => (await count(tdb.url, `SELECT count(*)::int AS n FROM ledger WHERE engine = 'A' AND step = 'waits'`)) >= 10,
        'all ten third bodies wrote on A',
        30_000,
      );
      a.proc.kill('SIGSTOP');
      const b = spawn({ ...lease, WEFT_ENGINE_ID: 'B' });
      await b.waitEvent('ready');
      await waitFor(
        async () => (await count(tdb.url, `SELECT count(*)::int AS n FROM weft.weft_workflows WHERE status = 'completed'`)) === 10,
        'B finishes all ten',
        60_000,
        200,
      );
      a.proc.kill('SIGCONT');
      // A's bodies finish waiting and try to commit: the fence refuses each inside its transaction.
      await waitFor(() => noOpenTransactions(tdb.url), "A's transactions ended", 30_000, 200);

      await expectExactlyOnce(tdb.url, 'stop', 10, 6);
      const ran = await query<{ step: string; engine: string; n: number }>(
        tdb.url,
        'SELECT step, engine, count(*)::int AS n FROM ledger GROUP BY step, engine',
      );
      const ranOn = (step: string, engine: string) => ran.find((r) => r.step === step && r.engine === engine)?.n ?? 0;
      // The first attempt's write and the 40001'd attempt's write rolled back: at least two bodies
      // each (the ten serializable bodies also conflict with each other), one row.
      expect(ranOn('fails-once', 'A')).toBe(20);
      expect(ranOn('serializable', 'A')).toBeGreaterThanOrEqual(20);
      // Every third body ran on A; those still waiting at the SIGSTOP ran again on B, and only B's
      // of those committed (each B body once): A's commits were refused.
      expect(ranOn('waits', 'A')).toBe(10);
      expect(ranOn('waits', 'B')).toBeGreaterThan(0);
      expect(await count(tdb.url, `SELECT count(*)::int AS n FROM tx_rows WHERE seq = 2 AND engine = 'B'`)).toBe(ranOn('waits', 'B'));
      expect(a.stderr.join('')).toContain('WeftWorkflowClaimLostWarning');
    }, 120_000);
  });

  describe('on a private PostgreSQL cluster', () => {
    let cluster: PgCluster;
    beforeAll(async () => {
      cluster = await PgCluster.create({ maxConnections: 60 });
    }, 120_000);
    afterAll(async () => {
      await cluster?.destroy();
    });

    it('PostgreSQL restarts (immediate shutdown) while transactional bodies wait to commit: each step commits once, all complete', async () => {
      const url = cluster.url();
      const a = spawn({
        DATABASE_URL: url,
        WEFT_ENGINE_ID: 'A',
        START_TYPE: 'tx-steps',
        START_COUNT: '10',
        STEP_MS: '3000',
        ID_PREFIX: 'pg',
      });
      await a.waitEvent('started');
      await waitFor(
        async () => (await count(url, `SELECT count(*)::int AS n FROM ledger WHERE seq = 0`)) >= 10,
        'all ten first bodies wrote',
        30_000,
      );
      // They wait 1.5 to 4.5 s before they commit: the restart cuts most of them off.
      await cluster.stop('immediate');
      await cluster.start();
      await waitFor(
        async () =>
          (await count(url, `SELECT count(*)::int AS n FROM weft.weft_workflows WHERE status = 'completed'`).catch(() => 0)) === 10,
        'the engine finishes all ten after the restart',
        90_000,
        200,
      );
      await expectExactlyOnce(url, 'pg', 10, 6);
      // The bodies cut off by the restart ran again: more bodies than rows.
      const bodies = await count(url, 'SELECT count(*)::int AS n FROM ledger');
      expect(bodies).toBeGreaterThan(30);
    }, 180_000);
  });
});
