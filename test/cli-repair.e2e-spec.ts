import { createTestDatabase, TestDatabase } from './support/database.js';
import { runCli, type Ran } from './support/cli.js';
import { quietLogger, waitFor } from './support/engine.js';
import { sourcePath } from './support/node-ts.js';
import { WeftEngine } from '../libs/weft/src/engine/engine.js';
import { RepairOrder, repairState } from './fixtures/repair-workflows.js';

/**
 * weft retry and weft fork (docs/cli.md, "Repair"), in bulk by attribute: count, confirmation,
 * progress, summary, and a re-run with --as-of that does nothing twice. An in-process engine
 * (ownership 'workflow-lease') runs the workflows; the CLI checks with the same code
 * (--workflows) and leaves the repaired runs to it.
 */
describe('weft retry and weft fork', () => {
  let tdb: TestDatabase;
  let engine: WeftEngine;
  const workflows = sourcePath('test/fixtures/repair-workflows.ts');
  const weft = (args: string[], env: Record<string, string> = {}): Promise<Ran> =>
    runCli([...args, '--schema', 'weft', '--workflows', workflows], { env: { DATABASE_URL: tdb.url, ...env } });
  const json = async (args: string[]) => {
    const r = await weft([...args, '--json']);
    if (r.code !== 0) throw new Error(`weft ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return { out: JSON.parse(r.stdout) as Record<string, unknown>, stderr: r.stderr };
  };
  const statusOf = async (id: string) => (await engine.describe(id)).status;
  const count = (id: string, step: string) => repairState.ran.get(`${id}:${step}`) ?? 0;
  const ids = Array.from({ length: 6 }, (_, i) => `ro-${i}`);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    engine = await WeftEngine.create({
      database: { url: tdb.url },
      schema: 'weft',
      ownership: 'workflow-lease',
      workflowClaimTtl: 1500,
      workflowClaimRenewInterval: 500,
      logger: quietLogger(),
      timerPollInterval: 50,
      shutdownGracePeriod: 0,
    });
    engine.register('repair-order', RepairOrder);
    await engine.bootstrap();
    repairState.brokenTenant = 1;
    for (const [i, id] of ids.entries())
      await engine.start('repair-order', { tenant: i % 2 }, { workflowId: id, attributes: { tenant: i % 2 } });
    await waitFor(
      async () => (await Promise.all(ids.map(statusOf))).every((s) => s === 'completed' || s === 'failed'),
      'all ended',
      30_000,
    );
  }, 60_000);

  afterAll(async () => {
    await engine?.dispose();
    await tdb?.drop();
  });

  it('bulk retry by attribute: refused without --yes, then exactly the failed ones go on from charge; a re-run with --as-of does nothing', async () => {
    const failed = ids.filter((_, i) => i % 2 === 1);
    const refused = await weft(['retry', '--where', 'tenant=1']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('3 workflow(s) match (status failed, tenant=1).');
    repairState.brokenTenant = null; // the fix
    const { out, stderr } = await json(['retry', '--where', 'tenant=1', '--yes']);
    expect(out).toMatchObject({ matched: 3, retried: 3, skipped: 0, failed: [] });
    expect(stderr).toContain('3/3 retried');
    for (const id of failed) await waitFor(async () => (await statusOf(id)) === 'completed', `${id} retried`, 20_000);
    for (const id of failed) {
      expect([count(id, 'reserve'), count(id, 'charge')]).toEqual([1, 2]);
      expect((await engine.describe(id)).retriedFrom).toEqual({ runNumber: 1, fromSeq: 1 });
    }
    for (const id of ids.filter((_, i) => i % 2 === 0)) expect((await engine.describe(id)).runNumber).toBe(1);
    const again = await json(['retry', '--where', 'tenant=1', '--yes', '--as-of', String(out.asOf)]);
    expect(again.out).toMatchObject({ matched: 0, retried: 0 });
  });

  it('bulk fork from a step name: one fork per source, none twice when run again', async () => {
    const sources = ids.filter((_, i) => i % 2 === 0);
    const { out } = await json(['fork', '--from-step', 'charge', '--where', 'tenant=0', '--yes']);
    expect(out).toMatchObject({ matched: 3, forked: 3, skipped: 0 });
    for (const id of sources) {
      const forkId = `${id}~fork-charge`;
      await waitFor(async () => (await statusOf(forkId)) === 'completed', `${forkId} completed`, 20_000);
      expect([count(forkId, 'reserve'), count(forkId, 'charge')]).toEqual([0, 1]);
      expect((await engine.describe(forkId)).forkedFrom).toEqual({ workflowId: id, runNumber: 1, fromSeq: 1 });
    }
    const again = await json(['fork', '--from-step', 'charge', '--where', 'tenant=0', '--yes', '--as-of', String(out.asOf)]);
    expect(again.out).toMatchObject({ matched: 3, forked: 0, skipped: 3 });
  });

  it('a history the given code does not replay is refused with WEFT_FORK_REFUSED (exit 1), nothing written', async () => {
    const r = await weft(['fork', 'ro-0', '--from-step', 'charge', '--workflow-id', 'never'], { REPAIR_RESERVE_STEP: 'reserve-v2' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('WEFT_FORK_REFUSED');
    await expect(engine.describe('never')).rejects.toThrow(/No workflow/);
    const usage = await runCli(['retry', 'ro-0', '--schema', 'weft'], { env: { DATABASE_URL: tdb.url } });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--workflows');
  });
});
