import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { maxOverlap } from './support/intervals.js';
import { EngineProcesses, fixture } from './support/processes.js';

// queues.rw.releaseWhileWaiting across engine processes (docs/queues.md, docs/decisions/0040): a
// queue at concurrency 1 whose two runs each sleep. Both sleep at once (each gave its slot back);
// their step bodies, every real execution of them as the ledger records it, never overlap; a
// SIGKILL of the engine that owns the first while it sleeps leaves both to the other engine.

interface Row {
  n: number;
  workflow_id: string;
  step: string;
  engine: string;
  begun_at: Date;
  ended_at: Date | null;
}

describe('releaseWhileWaiting across engine processes', () => {
  let tdb: TestDatabase;
  const procs = new EngineProcesses(fixture('queue-engine'), () => ({ DATABASE_URL: tdb.url }));
  const ledger = () => tdb.query<Row>(`SELECT * FROM slot_ledger ORDER BY begun_at, n`);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query(`CREATE TABLE queue_ledger (workflow_id text PRIMARY KEY, begin_engine text NOT NULL,
      begun_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz, end_engine text, ends int NOT NULL DEFAULT 0, tag text)`);
    await tdb.query(`CREATE TABLE slot_ledger (n serial PRIMARY KEY, workflow_id text NOT NULL, step text NOT NULL, engine text NOT NULL,
      begun_at timestamptz NOT NULL DEFAULT clock_timestamp(), ended_at timestamptz)`);
  });
  afterAll(async () => {
    await procs.killAll();
    await tdb?.drop();
  });

  it('concurrency 1: two sleepers sleep at once, never run at once, and a SIGKILL of the owner while parked leaves both to the other engine', async () => {
    const engines = new Map([
      ['A', procs.spawn('A')],
      ['B', procs.spawn('B')],
    ]);
    await Promise.all([...engines.values()].map((c) => c.waitEvent('ready', 60_000)));
    // Sleeps long enough for the kill and the takeover (TTL 1.5 s) to happen while both sleep on a loaded machine.
    const items = ['rw-1', 'rw-2'].map((id) => ({ id, type: 'sleeper', queue: 'rw', ms: 300, sleep: 8000 }));
    engines.get('A')!.proc.stdin!.write(`${JSON.stringify({ cmd: 'start', items })}\n`);
    // Both asleep: each ran its first step and gave its slot back.
    await waitFor(
      async () =>
        (await tdb.query(`SELECT 1 FROM weft.weft_workflows WHERE id LIKE 'rw-%' AND status = 'running' AND slot_released_at IS NOT NULL`))
          .length === 2,
      'both sleepers asleep with their slots given back',
      30_000,
      20,
    );
    const [{ engine_id: owner }] = await tdb.query<{ engine_id: string }>(
      `SELECT engine_id FROM weft.weft_workflow_claims WHERE workflow_id = 'rw-1'`,
    );
    await procs.kill(engines.get(owner)!);
    engines.delete(owner);
    const [survivor] = [...engines.keys()];

    await waitFor(
      async () => (await tdb.query(`SELECT 1 FROM weft.weft_workflows WHERE id LIKE 'rw-%' AND status = 'completed'`)).length === 2,
      'both to complete',
      60_000,
      100,
    );
    const rows = await ledger();
    const ended = rows.filter((r) => r.ended_at !== null);
    // Every execution of a step body that ended, and any the kill cut short (open until the end of the test).
    const until = Date.now() + 1;
    const spans = rows.map((r) => ({ from: r.begun_at.getTime(), to: r.ended_at?.getTime() ?? until }));
    expect(maxOverlap(spans)).toBe(1);
    // Both slept at once: both first steps ended before either second step began.
    const a = ended.filter((r) => r.step === 'a');
    const b = ended.filter((r) => r.step === 'b');
    expect(new Set(a.map((r) => r.workflow_id))).toEqual(new Set(['rw-1', 'rw-2']));
    expect(Math.max(...a.map((r) => r.ended_at!.getTime()))).toBeLessThanOrEqual(Math.min(...b.map((r) => r.begun_at.getTime())));
    // The survivor finished both (rw-1 taken over while it slept).
    expect(b.map((r) => [r.workflow_id, r.engine]).sort()).toEqual([
      ['rw-1', survivor],
      ['rw-2', survivor],
    ]);
  }, 180_000);
});
