import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { fixture, spawnChild } from './support/processes.js';

/**
 * A child runs 20 workflows of three transactional steps and is SIGKILLed while bodies are
 * between their write and their commit; a second process finishes them. Each step's row is in
 * the application table exactly once, though some bodies wrote twice.
 */
describe('transactional steps across a SIGKILL (real processes)', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('exactly one application row per (workflow, step); the bodies killed after their write ran again', async () => {
    const env = { DATABASE_URL: tdb.url, WEFT_SCHEMA: 'weft', STEP_MS: '300', ID_PREFIX: 'txkill', START_TYPE: 'tx-steps' };
    const a = spawnChild(fixture('engine-child'), { ...env, WEFT_ENGINE_ID: 'A', START_COUNT: '20' });
    await a.waitEvent('started');
    await waitFor(
      async () => (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM ledger WHERE engine = 'A'`))[0].n >= 30,
      '30 transactional bodies wrote on A',
    );
    a.proc.kill('SIGKILL');
    await a.exited;

    // Bodies that wrote (ledger, outside their transaction) but whose transaction never committed.
    const wroteOnA = (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM ledger WHERE engine = 'A'`))[0].n;
    const committedOnA = (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM tx_rows WHERE engine = 'A'`))[0].n;
    expect(wroteOnA).toBeGreaterThan(committedOnA);
    const recorded = (await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_operations'))[0].n;
    expect(recorded).toBe(committedOnA); // a row committed iff its step's record did

    const b = spawnChild(fixture('engine-child'), { ...env, WEFT_ENGINE_ID: 'B' });
    try {
      await b.waitEvent('ready');
      await waitFor(
        async () =>
          (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows WHERE status = 'completed'`))[0].n === 20,
        'all 20 completed',
        60_000,
        100,
      );
    } finally {
      await b.stop('SIGTERM');
    }
    const rows = await tdb.query<{ workflow_id: string; seq: number; n: number }>(
      'SELECT workflow_id, seq, count(*)::int AS n FROM tx_rows GROUP BY workflow_id, seq',
    );
    expect(rows).toHaveLength(60);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    const outputs = await tdb.query<{ output: number }>('SELECT output FROM weft.weft_workflows');
    expect(outputs.every((o) => o.output === 6)).toBe(true);
    // Some step ran twice (A's killed body, then B's), yet wrote once.
    const twice = await tdb.query('SELECT workflow_id, seq FROM ledger GROUP BY workflow_id, seq HAVING count(*) > 1');
    expect(twice.length).toBeGreaterThan(0);
  });
});
