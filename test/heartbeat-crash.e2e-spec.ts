import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { fixture, spawnChild } from './support/processes.js';

/**
 * A worker SIGKILLed in the middle of a long step that heartbeats its progress: once the claim
 * moves, another process runs the step again from the last saved heartbeat (docs/long-steps.md),
 * so only the items after it are done again.
 */
describe('a step resumes from its last heartbeat after its worker is SIGKILLed', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('the next owner starts after the last saved item; items before it are never done again', async () => {
    const env = { DATABASE_URL: tdb.url, ITEMS: '60', ITEM_MS: '30' };
    const a = spawnChild(fixture('heartbeat-engine'), { ...env, WEFT_ENGINE_ID: 'A', START: '1' });
    await a.waitEvent('ready');
    // Well into the import, with some heartbeat saved.
    await waitFor(
      async () =>
        (await tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM hb_items WHERE engine = 'A'`).catch(() => [{ n: 0 }]))[0].n >= 15,
      '15 items done on A',
      30_000,
    );
    await waitFor(
      async () => (await tdb.query(`SELECT 1 FROM weft.weft_step_progress WHERE workflow_id = 'import-1' AND has_details`)).length > 0,
      'a heartbeat saved',
    );
    a.proc.kill('SIGKILL');
    await a.exited;
    const [saved] = await tdb.query<{ done: number; attempt: number }>(
      `SELECT (details->>'done')::int AS done, attempt FROM weft.weft_step_progress WHERE workflow_id = 'import-1'`,
    );
    expect(saved.done).toBeGreaterThanOrEqual(0);

    const b = spawnChild(fixture('heartbeat-engine'), { ...env, WEFT_ENGINE_ID: 'B' });
    try {
      await b.waitEvent('ready');
      await waitFor(
        async () => (await tdb.query(`SELECT 1 FROM weft.weft_workflows WHERE id = 'import-1' AND status = 'completed'`)).length > 0,
        'the import completed on B',
        60_000,
        100,
      );
    } finally {
      await b.stop('SIGTERM');
    }
    const [wf] = await tdb.query<{ output: { from: number; items: number } }>(
      `SELECT output FROM weft.weft_workflows WHERE id = 'import-1'`,
    );
    expect(wf.output).toEqual({ from: saved.done + 1, items: 60 });
    const done = await tdb.query<{ item: number; engine: string }>(`SELECT item, engine FROM hb_items ORDER BY item, engine`);
    // B did exactly the items after the saved heartbeat; A's items up to it were not done again.
    expect(done.filter((d) => d.engine === 'B').map((d) => d.item)).toEqual(
      Array.from({ length: 59 - saved.done }, (_, i) => saved.done + 1 + i),
    );
    expect(done.filter((d) => d.engine === 'A' && d.item <= saved.done)).toHaveLength(saved.done + 1);
    const [op] = await tdb.query<{ attempts: number }>(`SELECT attempts FROM weft.weft_operations WHERE workflow_id = 'import-1'`);
    expect(op.attempts).toBe(saved.attempt + 1);
    expect(await tdb.query(`SELECT 1 FROM weft.weft_step_progress`)).toHaveLength(0);
  });
});
