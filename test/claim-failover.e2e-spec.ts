import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { fixture, Child, spawnChild } from './support/processes.js';

const count = async (tdb: TestDatabase, sql: string, params: unknown[] = []) => (await tdb.query<{ n: number }>(sql, params))[0].n;
const completed = (tdb: TestDatabase, prefix: string) =>
  count(tdb, `SELECT count(*)::int AS n FROM weft.weft_workflows WHERE id LIKE $1 AND status = 'completed'`, [`${prefix}-%`]);

/** Engines in separate processes, ownership 'workflow-lease', short claim TTL. */
describe('claim failover across processes', () => {
  let tdb: TestDatabase;
  const children: Child[] = [];
  const env = () => ({
    DATABASE_URL: tdb.url,
    WEFT_SCHEMA: 'weft',
    OWNERSHIP: 'workflow-lease',
    CLAIM_TTL_MS: '1500',
    CLAIM_RENEW_MS: '500',
  });
  const spawn = (extra: Record<string, string>) => {
    const c = spawnChild(fixture('engine-child'), { ...env(), ...extra });
    children.push(c);
    return c;
  };

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterEach(async () => {
    for (const c of children.splice(0)) {
      c.proc.kill('SIGCONT');
      c.proc.kill('SIGKILL');
      await c.exited;
    }
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('SIGKILL one of three engines holding 200 workflows: the survivors finish them all, share them, and re-run no recorded step', async () => {
    // The survivors first: on a loaded machine their start-up took longer than A's 5 s of work.
    const b = spawn({ WEFT_ENGINE_ID: 'B' });
    const c = spawn({ WEFT_ENGINE_ID: 'C' });
    await Promise.all([b.waitEvent('ready', 60_000), c.waitEvent('ready', 60_000)]);
    const a = spawn({ WEFT_ENGINE_ID: 'A', START_COUNT: '200', STEP_MS: '1000', ID_PREFIX: 'kill' });
    await a.waitEvent('started', 60_000);
    await waitFor(
      async () => (await count(tdb, `SELECT count(*)::int AS n FROM weft.weft_operations WHERE workflow_id LIKE 'kill-%'`)) >= 200,
      'a step each',
    );
    a.proc.kill('SIGKILL');
    await a.exited;
    const recordedAtKill = new Set(
      (
        await tdb.query<{ k: string }>(`SELECT workflow_id || '#' || seq AS k FROM weft.weft_operations WHERE workflow_id LIKE 'kill-%'`)
      ).map((r) => r.k),
    );
    await waitFor(async () => (await completed(tdb, 'kill')) === 200, 'all 200 completed', 60_000, 200);
    const ledger = await tdb.query<{ k: string; engine: string }>(
      `SELECT workflow_id || '#' || seq AS k, engine FROM ledger WHERE workflow_id LIKE 'kill-%'`,
    );
    for (const l of ledger) if (recordedAtKill.has(l.k)) expect([l.k, l.engine]).toEqual([l.k, 'A']);
    const byKey = new Map<string, number>();
    for (const l of ledger) byKey.set(l.k, (byKey.get(l.k) ?? 0) + 1);
    expect(Math.max(...byKey.values())).toBeLessThanOrEqual(2); // at most the in-flight body ran twice
    const shares = await tdb.query<{ engine: string; n: number }>(
      `SELECT engine, count(DISTINCT workflow_id)::int AS n FROM ledger WHERE workflow_id LIKE 'kill-%' AND engine <> 'A' GROUP BY engine`,
    );
    const share = Object.fromEntries(shares.map((s) => [s.engine, s.n]));
    expect(share.B).toBeGreaterThan(0);
    expect(share.C).toBeGreaterThan(0);
    expect(await count(tdb, `SELECT count(*)::int AS n FROM weft.weft_operations WHERE workflow_id LIKE 'kill-%'`)).toBe(1000);
    // All ended: no row fences an epoch any more, so no claim is held (docs/decisions/0011).
    expect(await count(tdb, `SELECT count(*)::int AS n FROM weft.weft_workflows WHERE id LIKE 'kill-%' AND fence_epoch IS NOT NULL`)).toBe(
      0,
    );
    // Its waits have deadlines of their own (60 s each): the test's budget is their sum, not one of them.
  }, 240_000);

  it('SIGSTOP an engine past the claim TTL: another takes over; after SIGCONT nothing it does lands and it starts no further step', async () => {
    const a = spawn({ WEFT_ENGINE_ID: 'P', START_COUNT: '20', STEP_MS: '300', ID_PREFIX: 'stop' });
    await a.waitEvent('started');
    await waitFor(
      async () => (await count(tdb, `SELECT count(*)::int AS n FROM ledger WHERE workflow_id LIKE 'stop-%'`)) >= 20,
      'steps running on P',
    );
    a.proc.kill('SIGSTOP');
    const b = spawn({ WEFT_ENGINE_ID: 'Q' });
    await b.waitEvent('ready');
    await waitFor(async () => (await completed(tdb, 'stop')) === 20, 'Q finishes all 20', 60_000, 200);
    const [{ at: resumedAt }] = await tdb.query<{ at: Date }>('SELECT clock_timestamp() AS at');
    const versions = await tdb.query(`SELECT id, version FROM weft.weft_workflows WHERE id LIKE 'stop-%' ORDER BY id`);
    a.proc.kill('SIGCONT');
    await waitFor(() => a.stderr.join('').includes('WeftWorkflowClaimLostWarning'), 'P notices it lost its claims', 15_000);
    // P's in-flight bodies may finish (the documented window), but P starts no new step body...
    expect(await count(tdb, `SELECT count(*)::int AS n FROM ledger WHERE engine = 'P' AND at > $1`, [resumedAt])).toBe(0);
    // ...and none of its writes lands: versions and histories are exactly what Q left.
    expect(await tdb.query(`SELECT id, version FROM weft.weft_workflows WHERE id LIKE 'stop-%' ORDER BY id`)).toEqual(versions);
    const ops = await tdb.query<{ id: string; seqs: number[] }>(
      `SELECT workflow_id AS id, array_agg(seq ORDER BY seq) AS seqs FROM weft.weft_operations WHERE workflow_id LIKE 'stop-%' GROUP BY workflow_id`,
    );
    expect(ops).toHaveLength(20);
    for (const o of ops) expect(o.seqs).toEqual([0, 1, 2, 3, 4]);
  });
});
