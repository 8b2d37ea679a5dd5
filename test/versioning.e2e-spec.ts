import { WeftEngine } from '../libs/weft/src/engine/engine.js';
import { WorkflowReplayer } from '../libs/weft/src/engine/replayer.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { quietLogger, waitFor } from './support/engine.js';
import { Child, fixture, spawnChild } from './support/processes.js';
import { PAYMENT_FLOW_CODE } from './fixtures/versioned-workflows.js';

type Code = keyof typeof PAYMENT_FLOW_CODE;

/**
 * Deploys of one workflow's code while its runs are halfway through, each deploy an engine
 * process restarted with the new code (test/fixtures/versioned-engine.ts): runs started on v1
 * finish on v1's path after v2 (ctx.patched) is deployed, new runs take v2's; a v3 that removes
 * the patch too early is caught by the replayer and suspends the runs that recorded the marker,
 * which resume once v2 is back.
 */
describe('versioning: ctx.patched across deploys (engine processes restarted with new code)', () => {
  let tdb: TestDatabase;
  let client: WeftEngine; // runs no type: signals, describes, resumes
  const children: Child[] = [];
  const deploy = async (code: Code, start?: string) => {
    const c = spawnChild(fixture('versioned-engine'), {
      DATABASE_URL: tdb.url,
      WEFT_ENGINE_ID: `engine-${code}-${children.length}`,
      CODE: code,
      ...(start ? { START: start } : {}),
    });
    children.push(c);
    await c.waitEvent('ready', 60_000);
    if (start) await c.waitEvent('started', 60_000);
    return c;
  };
  const stop = (c: Child) => c.stop('stdin'); // graceful: the engine releases its claims
  const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  /** Runs of the prefix parked at the 'ship' signal: reserve and a charge recorded. */
  const parked = async (prefix: string) =>
    (
      await tdb.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM weft.weft_workflows w
         WHERE w.id LIKE $1 AND (SELECT count(*) FROM weft.weft_operations o WHERE o.workflow_id = w.id AND o.kind = 'step') = 2`,
        [`${prefix}-%`],
      )
    )[0].n;
  const replayer = (code: Code) => new WorkflowReplayer([['payment-flow', PAYMENT_FLOW_CODE[code]]]);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    client = await WeftEngine.create({ database: { url: tdb.url }, schema: 'weft', logger: quietLogger(), shutdownGracePeriod: 0 });
    await client.bootstrap();
  });
  afterAll(async () => {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    await client?.dispose();
    await tdb?.drop();
  });

  it('v1 runs keep their path under v2; new runs take the patch; removing it too early is caught and suspends, v2 again resumes them', async () => {
    const v1 = await deploy('v1', 'old:50');
    await waitFor(async () => (await parked('old')) === 50, '50 v1 runs parked', 30_000, 50);
    await stop(v1);

    const v2 = await deploy('v2', 'new:10');
    await waitFor(async () => (await parked('new')) === 10, '10 v2 runs parked', 30_000, 50);
    const before = await Promise.all([...ids('old', 50), ...ids('new', 10)].map((id) => client.describe(id)));
    expect(new Set(before.filter((d) => d.workflowId.startsWith('old')).map((d) => d.workflowVersion))).toEqual(new Set(['v1']));
    expect(before.find((d) => d.workflowId === 'new-0')!.history.map((o) => `${o.kind}:${o.name}`)).toEqual([
      'step:reserve',
      'patch:wallet',
      'step:charge-wallet',
    ]);

    // The replay check a user runs in CI, on the histories as describe exported them.
    const ok = await replayer('v2').replayAll(before);
    expect(ok.filter((r) => !r.ok)).toEqual([]);
    const early = await replayer('v3').replay(before.find((d) => d.workflowId === 'new-0')!);
    expect(early.ok).toBe(false);
    expect(!early.ok && early.error).toMatchObject({ code: 'WEFT_NON_DETERMINISM', seq: 1, recorded: { kind: 'patch', name: 'wallet' } });
    expect(!early.ok && early.error.message).toContain('ctx.patched("wallet")');

    await Promise.all([...ids('old', 50), ...ids('new', 10)].map((id) => client.signal(id, 'ship')));
    const paths = await Promise.all([...ids('old', 50), ...ids('new', 10)].map((id) => client.result<string>(id, { timeout: '60s' })));
    expect(paths.slice(0, 50)).toEqual(Array(50).fill('card'));
    expect(paths.slice(50)).toEqual(Array(10).fill('wallet'));

    // Too early: v3 while runs that recorded the marker are parked.
    await stop(v2);
    const v2again = await deploy('v2', 'early:5');
    await waitFor(async () => (await parked('early')) === 5, '5 runs parked', 30_000, 50);
    await stop(v2again);
    const v3 = await deploy('v3');
    await Promise.all(ids('early', 5).map((id) => client.signal(id, 'ship')));
    await waitFor(
      async () => (await Promise.all(ids('early', 5).map((id) => client.describe(id)))).every((d) => d.status === 'suspended'),
      'the early runs suspended',
      30_000,
      50,
    );
    const suspended = await client.describe('early-0');
    expect(suspended.error).toMatchObject({ code: 'WEFT_NON_DETERMINISM', recorded: { kind: 'patch', name: 'wallet' } });
    await stop(v3);
    await deploy('v2');
    for (const id of ids('early', 5)) await client.resume(id);
    const resumed = await Promise.all(ids('early', 5).map((id) => client.result<string>(id, { timeout: '60s' })));
    expect(resumed).toEqual(Array(5).fill('wallet'));
  }, 240_000);
});
