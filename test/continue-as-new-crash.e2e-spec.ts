import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { Child, fixture, spawnChild } from './support/processes.js';

const LIMIT = 400;

/**
 * A workflow continuing as new 400 times while its engine processes are SIGKILLed: runs switch
 * every millisecond or two, so each kill lands in or next to a switch. Afterwards the ledger
 * (one row per executed step body) must show one chain: every number ran in the run that
 * carries it (k = run number), none was skipped, and the workflow ended at the last one.
 */
describe('continueAsNew across SIGKILLed engine processes', () => {
  let tdb: TestDatabase;
  const children: Child[] = [];
  const spawn = (id: string, start?: string) => {
    const c = spawnChild(fixture('continue-engine'), { DATABASE_URL: tdb.url, WEFT_ENGINE_ID: id, ...(start ? { START: start } : {}) });
    children.push(c);
    return c;
  };
  const kill = async (c: Child) => {
    c.proc.kill('SIGKILL');
    await c.exited;
  };
  const ledgerRows = async () => Number((await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM chain_ledger`))[0].n);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query(`CREATE TABLE chain_ledger (id bigserial, workflow_id text, k int, run_number int, engine text)`);
  });
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null) await kill(c);
    await tdb?.drop();
  });

  it('exactly one next run per switch, whichever engine dies', async () => {
    const a = spawn('A', `chain-1:${LIMIT}`);
    const b = spawn('B');
    await Promise.all([a.waitEvent('ready', 60_000), b.waitEvent('ready', 60_000)]);
    await waitFor(async () => (await ledgerRows()) >= 60, 'sixty runs', 30_000, 5);
    await kill(a); // B takes the workflow over once A's claim expires
    const c = spawn('C');
    await c.waitEvent('ready', 60_000);
    const owner = async () =>
      (await tdb.query<{ engine_id: string | null }>(`SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = 'chain-1'`))[0]
        ?.engine_id;
    await waitFor(async () => ['B', 'C'].includes((await owner()) ?? ''), 'a takeover', 30_000, 20);
    const before = await ledgerRows();
    await waitFor(async () => (await ledgerRows()) >= before + 60, 'sixty more runs', 30_000, 5);
    // Then the engine that holds it now: the survivor takes it over and finishes the chain.
    const holder = (await owner()) === 'B' ? b : c;
    await kill(holder);
    await waitFor(
      async () =>
        (await tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = 'chain-1'`))[0]?.status === 'completed',
      'the chain to complete',
      60_000,
      50,
    );

    const [row] = await tdb.query<{ run_number: number; output: unknown; input: unknown }>(
      `SELECT run_number, output, input FROM weft.weft_workflows WHERE id = 'chain-1'`,
    );
    expect(row).toEqual({ run_number: LIMIT, output: { k: LIMIT }, input: { k: LIMIT, limit: LIMIT } });
    // A fork would show one number under two run numbers, or a run number with another k.
    const bad = await tdb.query(`SELECT k, run_number FROM chain_ledger WHERE k <> run_number`);
    expect(bad).toEqual([]);
    const ks = await tdb.query<{ k: number }>(`SELECT DISTINCT k FROM chain_ledger ORDER BY k`);
    expect(ks.map((r) => r.k)).toEqual(Array.from({ length: LIMIT }, (_, i) => i + 1));
    // A body runs again only when its engine died between the body and its commit.
    const repeats = await tdb.query<{ n: number }>(`SELECT count(*)::int - count(DISTINCT k)::int AS n FROM chain_ledger`);
    expect(repeats[0].n).toBeLessThanOrEqual(2);
    const engines = await tdb.query<{ engine: string }>(`SELECT DISTINCT engine FROM chain_ledger ORDER BY engine`);
    expect(engines.length).toBeGreaterThanOrEqual(2);
  }, 180_000);
});
