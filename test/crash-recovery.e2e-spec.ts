import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { fixture, spawnChild } from './support/processes.js';

/**
 * A child runs 50 five-step workflows and is SIGKILLed mid-step; a second process recovers
 * them. The ledger proves that no recorded step body ran again and only in-flight ones re-ran.
 */
describe('crash recovery across processes (SIGKILL)', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('recovers all 50 workflows; recorded steps never re-run; at most the in-flight step per workflow does', async () => {
    const env = { DATABASE_URL: tdb.url, WEFT_SCHEMA: 'weft', STEP_MS: '60', ID_PREFIX: 'crash' };
    const a = spawnChild(fixture('engine-child'), { ...env, WEFT_ENGINE_ID: 'A', START_COUNT: '50' });
    await a.waitEvent('started'); // all 50 exist before the kill
    await waitFor(
      async () => (await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM ledger'))[0].n >= 100,
      '100 step bodies on A',
    );
    a.proc.kill('SIGKILL');
    await a.exited;

    const recorded = await tdb.query<{ workflow_id: string; seq: number }>('SELECT workflow_id, seq FROM weft.weft_operations');
    const recordedAtKill = new Set(recorded.map((r) => `${r.workflow_id}#${r.seq}`));
    const unfinished = (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows WHERE status = 'running'`))[0].n;
    expect(unfinished).toBeGreaterThan(0); // the kill really landed mid-run

    const b = spawnChild(fixture('engine-child'), { ...env, WEFT_ENGINE_ID: 'B' });
    try {
      await b.waitEvent('ready');
      await waitFor(
        async () =>
          (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows WHERE status = 'completed'`))[0].n === 50,
        'all 50 completed',
        60_000,
        100,
      );
    } finally {
      await b.stop('SIGTERM');
    }

    const outputs = await tdb.query<{ output: number }>(`SELECT output FROM weft.weft_workflows`);
    expect(outputs.every((o) => o.output === 15)).toBe(true);
    const ledger = await tdb.query<{ workflow_id: string; seq: number; engine: string }>('SELECT workflow_id, seq, engine FROM ledger');
    const runs = new Map<string, string[]>();
    for (const l of ledger) runs.set(`${l.workflow_id}#${l.seq}`, [...(runs.get(`${l.workflow_id}#${l.seq}`) ?? []), l.engine]);

    let reran = 0;
    const inFlightPerWorkflow = new Map<string, number>();
    for (const [key, engines] of runs) {
      if (recordedAtKill.has(key)) {
        expect(engines).toEqual(['A']); // recorded before the kill: never ran again
      } else if (engines.includes('A')) {
        expect(engines.sort()).toEqual(['A', 'B']); // in flight at the kill: ran again on B, once
        reran++;
        const wf = key.split('#')[0];
        inFlightPerWorkflow.set(wf, (inFlightPerWorkflow.get(wf) ?? 0) + 1);
      } else {
        expect(engines).toEqual(['B']);
      }
    }
    expect(reran).toBeGreaterThan(0);
    expect(Math.max(...inFlightPerWorkflow.values())).toBe(1);
    // Every step of every workflow is recorded exactly once.
    const ops = await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_operations`);
    expect(ops[0].n).toBe(250);
  });
});
