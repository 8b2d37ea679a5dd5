import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { fixture, spawnChild } from './support/processes.js';

/**
 * A Nest app (nestjs-cls, WeftClsInterceptor) starts a workflow inside a CLS context and is
 * SIGKILLed in its second step; a second process takes it over. Its step bodies still see the
 * CLS id and tenant of the start: they come from the headers stored with the workflow, not from
 * the killed process's memory (docs/interceptors.md).
 */
describe('interceptor headers across a SIGKILL takeover', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query('CREATE TABLE cls_ledger (engine text, step text, cls_id text, tenant text, at timestamptz DEFAULT clock_timestamp())');
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it("the new owner's run and steps see the CLS values captured at the start", async () => {
    const env = { DATABASE_URL: tdb.url };
    const a = spawnChild(fixture('cls-engine'), { ...env, WEFT_ENGINE_ID: 'A', START: '1' });
    try {
      await a.waitEvent('started', 90_000);
      await waitFor(
        async () => (await tdb.query(`SELECT 1 FROM cls_ledger WHERE engine = 'A' AND step = 'slow'`)).length === 1,
        "A in step 'slow'",
        30_000,
      );
    } finally {
      a.proc.kill('SIGKILL');
      await a.exited;
    }
    const b = spawnChild(fixture('cls-engine'), { ...env, WEFT_ENGINE_ID: 'B' });
    try {
      await b.waitEvent('ready', 90_000);
      await waitFor(
        async () => (await tdb.query(`SELECT 1 FROM weft.weft_workflows WHERE id = 'cls-kill-1' AND status = 'completed'`)).length === 1,
        `the workflow completed on B (stderr: ${b.stderr.join('').slice(-1000)})`,
        90_000,
        100,
      );
    } catch (err) {
      const state = await tdb.query(
        `SELECT w.status, w.error::text AS error, w.version, c.engine_id, c.expires_at, (SELECT json_agg(l) FROM cls_ledger l) AS ledger FROM weft.weft_workflows w LEFT JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id`,
      );
      throw new Error(`${(err as Error).message}; state ${JSON.stringify(state)}; B events ${JSON.stringify(b.events)}`);
    } finally {
      await b.stop('stdin');
    }
    const ledger = await tdb.query<{ engine: string; step: string; cls_id: string; tenant: string }>(
      'SELECT engine, step, cls_id, tenant FROM cls_ledger ORDER BY at',
    );
    expect(ledger).toEqual([
      { engine: 'A', step: 'first', cls_id: 'req-kill-1', tenant: 'tenant-k' },
      { engine: 'A', step: 'slow', cls_id: 'req-kill-1', tenant: 'tenant-k' },
      { engine: 'B', step: 'slow', cls_id: 'req-kill-1', tenant: 'tenant-k' },
      { engine: 'B', step: 'last', cls_id: 'req-kill-1', tenant: 'tenant-k' },
    ]);
    const [row] = await tdb.query<{ output: unknown }>(`SELECT output FROM weft.weft_workflows WHERE id = 'cls-kill-1'`);
    expect(row.output).toEqual({ id: 'req-kill-1', tenant: 'tenant-k' });
  }, 300_000); // two Nest processes booted from source on a loaded 2-core machine
});
