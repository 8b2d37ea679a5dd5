import { WeftEngine } from '../libs/weft/src/engine/engine.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { quietLogger, waitFor } from './support/engine.js';
import { fixture, spawnChild } from './support/processes.js';

/**
 * A cancelled workflow's owner SIGKILLed while its cleanup (ctx.nonCancellable) runs: once the
 * claim moves, another process replays the cancel at its recorded seq and finishes the cleanup,
 * running again only the step that was in flight, and the workflow ends as its code says
 * (docs/cancellation.md).
 */
describe('a cleanup interrupted by a SIGKILL is finished by another engine, each step recorded once', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  const cleanup = (id: string) =>
    tdb
      .query<{ step: string; engine: string }>(`SELECT step, engine FROM cancel_cleanup WHERE workflow_id = $1`, [id])
      .catch(() => [] as Array<{ step: string; engine: string }>);

  it('the second engine runs the in-flight cleanup step again and the rest once; completed or cancelled as the code says', async () => {
    const env = { DATABASE_URL: tdb.url, CLEANUP_MS: '3000' };
    const a = spawnChild(fixture('cancel-engine'), { ...env, WEFT_ENGINE_ID: 'A', START: '1' });
    await a.waitEvent('started');
    // The cancel comes from an engine that runs nothing (as the CLI's or the dashboard's would).
    const caller = await WeftEngine.create({ database: { url: tdb.url, poolSize: 2 }, schema: 'weft', logger: quietLogger() });
    try {
      for (const id of ['cleanup-1', 'cleanup-2']) {
        await waitFor(async () => (await cleanup(id)).some((r) => r.step === 'work'), `${id}: its 'work' step running on A`, 30_000);
      }
      await caller.cancel('cleanup-1', { reason: 'customer left' });
      await caller.cancel('cleanup-2', 'customer left');
    } finally {
      await caller.dispose();
    }
    for (const id of ['cleanup-1', 'cleanup-2']) {
      await waitFor(
        async () => (await cleanup(id)).some((r) => r.step === 'refund-began'),
        `${id}: the slow cleanup step running on A`,
        30_000,
      );
    }
    a.proc.kill('SIGKILL');
    await a.exited;
    for (const id of ['cleanup-1', 'cleanup-2'])
      expect((await cleanup(id)).map((r) => r.step).sort()).toEqual(['refund-began', 'release-stock', 'work']);

    const b = spawnChild(fixture('cancel-engine'), { ...env, WEFT_ENGINE_ID: 'B' });
    try {
      await b.waitEvent('ready');
      await waitFor(
        async () =>
          (await tdb.query(`SELECT 1 FROM weft.weft_workflows WHERE id LIKE 'cleanup-%' AND status IN ('completed', 'cancelled')`))
            .length === 2,
        'both ended on B',
        60_000,
        100,
      );
    } finally {
      await b.stop('SIGTERM');
    }
    const ends = await tdb.query<{ id: string; status: string; output: unknown; error: { code?: string; message?: string } | null }>(
      `SELECT id, status, output, error FROM weft.weft_workflows WHERE id LIKE 'cleanup-%' ORDER BY id`,
    );
    expect(ends).toEqual([
      { id: 'cleanup-1', status: 'completed', output: 'cleaned', error: null },
      {
        id: 'cleanup-2',
        status: 'cancelled',
        output: null,
        error: expect.objectContaining({ code: 'WEFT_WORKFLOW_CANCELLED', message: 'customer left' }),
      },
    ]);
    for (const id of ['cleanup-1', 'cleanup-2']) {
      const rows = (await cleanup(id)).map((r) => `${r.step}@${r.engine}`).sort();
      // release-stock was recorded before the kill: never again; the in-flight refund ran again on B.
      expect(rows).toEqual(['notify@B', 'refund-began@A', 'refund-began@B', 'refund@B', 'release-stock@A', 'work@A']);
      const ops = await tdb.query<{ kind: string; name: string; n: number }>(
        `SELECT kind, name, count(*)::int AS n FROM weft.weft_operations WHERE workflow_id = $1 GROUP BY kind, name ORDER BY min(seq)`,
        [id],
      );
      // The cancel once, each cleanup step once; the cancelled 'work' step never.
      expect(ops).toEqual([
        { kind: 'cancelRequested', name: 'cancel', n: 1 },
        { kind: 'step', name: 'release-stock', n: 1 },
        { kind: 'step', name: 'refund', n: 1 },
        { kind: 'step', name: 'notify', n: 1 },
      ]);
    }
    expect(await tdb.query(`SELECT kind FROM weft.weft_timers WHERE workflow_id LIKE 'cleanup-%'`)).toEqual([]);
  });
});
