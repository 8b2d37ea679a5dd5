import fs from 'node:fs';
import { CommandClient } from './fixtures/command-client.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { runCli, type Ran } from './support/cli.js';
import { quietLogger, waitFor } from './support/engine.js';
import { sourcePath } from './support/node-ts.js';
import { Child, fixture, spawnChild } from './support/processes.js';
import type { WorkflowContext } from '../libs/weft/src/common/types.js';
import { WeftEngine } from '../libs/weft/src/engine/engine.js';

/**
 * The `weft` CLI (docs/cli.md) run as a child process, from source, against a real database in
 * which engine A, another process (test/fixtures/engine-child.ts, ownership 'workflow-lease'),
 * runs the workflows. A lease-mode schema, run by an in-process engine, checks the refusal.
 */

describe('weft CLI', () => {
  let tdb: TestDatabase;
  let A: { child: Child; cmd: CommandClient };
  let leaseEngine: WeftEngine | undefined;

  /** Runs the CLI to its end against the test database. */
  const weft = (args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string } = {}): Promise<Ran> =>
    runCli(args, { ...opts, env: { DATABASE_URL: tdb.url, ...opts.env } });
  /** The CLI on schema 'weft', where A runs. */
  const w = (...args: string[]) => weft([...args, '--schema', 'weft']);
  const json = async <T = Record<string, unknown>>(...args: string[]): Promise<T> => {
    const r = await w(...args, '--json');
    if (r.code !== 0) throw new Error(`weft ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
  const status = async (id: string) =>
    (await tdb.query<{ status: string }>('SELECT status FROM weft.weft_workflows WHERE id = $1', [id]))[0]?.status;
  const claim = async (id: string) =>
    (
      await tdb.query<{ engine_id: string | null; epoch: string }>(
        'SELECT engine_id, epoch::text AS epoch FROM weft.weft_workflow_claims WHERE workflow_id = $1',
        [id],
      )
    )[0];
  const opened = (id: string) =>
    waitFor(
      async () => (await tdb.query(`SELECT 1 FROM weft.weft_operations WHERE workflow_id = $1 AND name = 'open'`, [id])).length === 1,
      `${id} past its first step`,
    );
  const startTally = async (id: string, label = id) => {
    await A.cmd.call('start', { type: 'tally', input: { label }, opts: { workflowId: id } });
    await opened(id);
  };

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const child = spawnChild(fixture('engine-child'), {
      DATABASE_URL: tdb.url,
      WEFT_SCHEMA: 'weft',
      OWNERSHIP: 'workflow-lease',
      CLAIM_TTL_MS: '1500',
      CLAIM_RENEW_MS: '500',
      WEFT_ENGINE_ID: 'engine-a',
      MESSAGE_TYPES: 'tally',
    });
    await child.waitEvent('ready');
    A = { child, cmd: new CommandClient(child.proc, 'engine-a') };
    await startTally('t-1', 'first');
    await startTally('t-2', 'second');
  }, 60_000);

  afterAll(async () => {
    if (A) {
      A.child.proc.kill('SIGKILL');
      await A.child.exited;
    }
    await leaseEngine?.dispose();
    await tdb?.drop();
  });

  describe('usage', () => {
    it("is the package's bin: a node script that tsc builds to dist/cli/main.js", () => {
      const pkg = JSON.parse(fs.readFileSync(sourcePath('libs/weft/package.json'), 'utf8')) as { bin?: unknown; files: string[] };
      expect(pkg.bin).toEqual({ weft: './dist/cli/main.js' });
      expect(pkg.files).toContain('dist');
      expect(fs.readFileSync(sourcePath('libs/weft/src/cli/main.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    });

    it('--help prints the commands on stdout and exits 0; a command has its own help', async () => {
      const [all, one] = await Promise.all([weft(['--help']), weft(['cancel', '--help'])]);
      expect(all.code).toBe(0);
      for (const c of ['list', 'describe', 'history', 'signal', 'cancel', 'suspend', 'resume', 'engines'])
        expect(all.stdout).toContain(`  ${c} `);
      expect(all.stdout).toContain('Exit codes: 0 ok, 1 failure, 2 bad usage');
      expect(one.code).toBe(0);
      expect(one.stdout).toContain('--yes');
    });

    it.concurrent.for([
      [[], 'No command given'],
      [['frobnicate'], 'Unknown command "frobnicate"'],
      [['list', '--bogus'], "Unknown option '--bogus'"],
      [['describe'], '"weft describe" needs <id>'],
      [['signal', 't-1'], '"weft signal" needs <id> <name>'],
      [['describe', 'a', 'b'], 'takes 1 argument(s), got 2'],
      [['list', '--limit', '0'], '--limit must be an integer from 1 to 1000'],
      [['list', '--status', 'sleeping'], '--status "sleeping" is not one of'],
      [['list', '--after', 'nonsense'], 'Invalid cursor'],
      [['describe', 'x'.repeat(256)], 'Invalid workflow id'],
      [['signal', 't-1', 'add', '--payload', '{nope'], '--payload is not JSON'],
      [['cancel'], '"weft cancel" needs a workflow id'],
      [['cancel', 't-1', '--type', 'tally'], 'not both'],
      [['cancel', '--status', 'completed'], 'ended workflows cannot be cancelled'],
      [['list', '--schema', 'Bad-Name'], 'Invalid Weft option "schema"'],
      [['schedules'], '"weft schedules" needs a subcommand'],
    ] as Array<[string[], string]>)(
      '%j is bad usage: exit 2 with the reason on stderr, nothing on stdout',
      async ([args, reason], { expect }) => {
        const r = await weft(args);
        expect(r.stderr).toContain(reason);
        expect(r.code).toBe(2);
        expect(r.stdout).toBe('');
      },
    );

    it('without --database-url or DATABASE_URL: exit 2 saying how to give one', async () => {
      const r = await weft(['list'], { env: { DATABASE_URL: undefined } });
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/WEFT_CLI_USAGE: No database: pass --database-url .* or set DATABASE_URL/);
    });

    it('--json errors are one JSON line on stderr with the code; stdout stays empty', async () => {
      const r = await w('describe', 'no-such-workflow', '--json');
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      expect(JSON.parse(r.stderr)).toEqual({
        error: { code: 'WEFT_WORKFLOW_NOT_FOUND', name: 'WorkflowNotFoundError', message: expect.stringContaining('no-such-workflow') },
      });
    });

    it('a schema without Weft tables is an error (exit 1), and the CLI does not create it', async () => {
      const r = await weft(['list', '--schema', 'nothing_here']);
      expect(r.code).toBe(1);
      expect(r.stderr).toContain('WEFT_SCHEMA_NOT_MIGRATED');
      expect(await tdb.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'nothing_here'`)).toEqual([]);
    });
  });

  describe('reads', () => {
    it('list: a table by default; --json items; filters; paging with --after', async () => {
      const table = await w('list', '--type', 'tally');
      expect(table.code).toBe(0);
      const lines = table.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+CREATED\s+UPDATED\s+PARENT$/);
      expect(lines.find((l) => l.startsWith('t-1 '))).toMatch(/^t-1\s+tally\s+running\s+\d{4}-\d\d-\d\dT/);

      const page = await json<{ items: Array<{ workflowId: string; type: string; status: string }>; nextCursor: string | null }>(
        'list',
        '--id-prefix',
        't-',
        '--status',
        'running,suspended',
      );
      expect(page.items.map((i) => [i.workflowId, i.type, i.status])).toEqual([
        ['t-1', 'tally', 'running'],
        ['t-2', 'tally', 'running'],
      ]);
      expect(page.nextCursor).toBeNull();

      const first = await w('list', '--id-prefix', 't-', '--limit', '1', '--json');
      const p1 = JSON.parse(first.stdout) as typeof page;
      expect(p1.items.map((i) => i.workflowId)).toEqual(['t-1']);
      expect(first.stderr).toContain(`More: add --after ${p1.nextCursor}`);
      const p2 = await json<typeof page>('list', '--id-prefix', 't-', '--limit', '1', '--after', p1.nextCursor!);
      expect(p2.items.map((i) => i.workflowId)).toEqual(['t-2']);

      // LIKE's wildcards in a prefix are literal.
      expect((await json<typeof page>('list', '--id-prefix', 't_')).items).toEqual([]);
      expect((await w('list', '--type', 'no-such-type')).stdout).toBe('No workflows match.\n');
    });

    it('list --where by attributes, --order newest, --include input', async () => {
      for (const [id, attributes] of [
        ['a-1', { tenant: 42, amount: 50 }],
        ['a-2', { tenant: 42, amount: 150 }],
        ['a-3', { tenant: 7, amount: 500 }],
      ] as const) {
        await A.cmd.call('start', { type: 'tally', input: { label: id }, opts: { workflowId: id, attributes } });
        await opened(id);
      }
      type Page = { items: Array<{ workflowId: string; attributes: object; input?: unknown }> };
      const ids = async (...args: string[]) => (await json<Page>('list', '--id-prefix', 'a-', ...args)).items.map((i) => i.workflowId);
      expect(await ids('--where', 'tenant=42')).toEqual(['a-1', 'a-2']);
      expect(await ids('--where', 'tenant=42', '--where', 'amount>100')).toEqual(['a-2']);
      expect(await ids('--where', 'amount>=50', '--order', 'newest')).toEqual(['a-3', 'a-2', 'a-1']);
      const [one] = (await json<Page>('list', '--where', 'tenant=7', '--include', 'input')).items;
      expect(one).toMatchObject({ workflowId: 'a-3', attributes: { tenant: 7, amount: 500 }, input: { label: 'a-3' } });
      const table = await w('list', '--where', 'tenant=7');
      expect(table.stdout.split('\n')[0]).toMatch(/^ID\s+TYPE\s+STATUS\s+CREATED\s+UPDATED\s+PARENT\s+ATTRIBUTES$/);
      const bad = await w('list', '--where', 'amount>soon');
      expect(bad.code).toBe(2);
      expect((await w('list', '--order', 'up')).code).toBe(2);
    });

    it('describe: status, input, and the claim held by engine A; --json the same as data', async () => {
      const d = await json<Record<string, unknown> & { ownership: { expiresInMs: number } }>('describe', 't-1');
      expect(d).toMatchObject({
        workflowId: 't-1',
        type: 'tally',
        status: 'running',
        runNumber: 1,
        input: { label: 'first' },
        output: null,
        error: null,
        attributes: {},
        operations: 1,
        pendingMessages: 0,
        children: [],
        childrenTotal: 0,
        ownership: { mode: 'workflow-lease', holder: 'engine-a', epoch: expect.stringMatching(/^\d+$/) },
      });
      expect(d.ownership.expiresInMs).toBeGreaterThan(0);
      const t = await w('describe', 't-1');
      expect(t.code).toBe(0);
      expect(t.stdout).toMatch(/^id\s+t-1$/m);
      expect(t.stdout).toMatch(/^status\s+running$/m);
      expect(t.stdout).toMatch(/^input\s+\{"label":"first"\}$/m);
      expect(t.stdout).toMatch(/^owner\s+engine-a \(epoch \d+, expires in [\d.]+m?s\)$/m);
    });

    it("describe shows the workflow's events (ctx.setEvent), by key", async () => {
      // As the advance statement writes one; the CLI only reads.
      await tdb.query(`INSERT INTO weft.weft_events (workflow_id, key, value, seq) VALUES ('t-2', 'stage', '{"n":1}', 0)`);
      const d = await json<{ events: Array<{ key: string; value: unknown }>; eventsTotal: number }>('describe', 't-2');
      expect(d.events.map((e) => [e.key, e.value])).toEqual([['stage', { n: 1 }]]);
      expect(d.eventsTotal).toBe(1);
      expect((await w('describe', 't-2')).stdout).toMatch(/^stage\s+\{"n":1\}\s+\d{4}-/m);
    });

    it('describe and history of a missing workflow: exit 1 with the typed code and message', async () => {
      for (const cmd of ['describe', 'history']) {
        const r = await w(cmd, 'missing-wf');
        expect(r.code).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toBe('weft: WEFT_WORKFLOW_NOT_FOUND: No workflow with id "missing-wf". Check the id, or start it first.\n');
      }
    });

    it('history: operations in order with times, attempts and results', async () => {
      const h = await json<{ operations: Array<Record<string, unknown>>; more: boolean }>('history', 't-2');
      expect(h.more).toBe(false);
      expect(h.operations).toEqual([
        expect.objectContaining({ seq: 0, kind: 'step', name: 'open', status: 'completed', attempts: 1, result: { label: 'second' } }),
      ]);
      expect(Date.parse(h.operations[0].completedAt as string)).toBeGreaterThan(0);
      const t = await w('history', 't-2');
      const [head, row] = t.stdout.trimEnd().split('\n');
      expect(head).toMatch(/^SEQ\s+KIND\s+NAME\s+STATUS\s+ATTEMPTS\s+STARTED\s+COMPLETED\s+TOOK\s+RESULT \/ ERROR$/);
      expect(row).toMatch(/^0\s+step\s+open\s+completed\s+1\s+\S+\s+\S+\s+\S+\s+\{"label":"second"\}$/);
    });

    it('engines: engine A with its claims and a recent renewal, by the database clock', async () => {
      const e = await json<{
        mode: string;
        engines: Array<{ engineId: string; claims: number; expiredClaims: number; lastRenewalAgeMs: number; expiresInMs: number }>;
        lease: unknown;
      }>('engines', '--claim-ttl', '1500');
      expect(e.mode).toBe('workflow-lease');
      const a = e.engines.find((x) => x.engineId === 'engine-a');
      expect(a).toMatchObject({ claims: expect.any(Number), expiredClaims: 0 });
      expect(a!.claims).toBeGreaterThanOrEqual(2);
      // Renewed every 500 ms: the latest renewal is younger than a TTL, and its expiry ahead.
      expect(a!.lastRenewalAgeMs).toBeGreaterThanOrEqual(-50);
      expect(a!.lastRenewalAgeMs).toBeLessThan(1500);
      expect(a!.expiresInMs).toBeGreaterThan(0);
      const t = await w('engines', '--claim-ttl', '1500');
      expect(t.stdout).toMatch(/^ownership: workflow-lease$/m);
      expect(t.stdout).toMatch(/^ENGINE\s+CLAIMS\s+EXPIRED\s+LAST RENEWAL\s+LATEST EXPIRY$/m);
      expect(t.stdout).toMatch(/^engine-a\s+\d+\s+0\s+\d+(ms|\.\ds) ago\s+\d{4}-/m);
    });

    it('user data cannot write control characters to the terminal', async () => {
      await A.cmd.call('start', { type: 'tally', input: { label: 'evil\u001b[2J\nrow' }, opts: { workflowId: 'ctl-1' } });
      await opened('ctl-1');
      const t = await w('describe', 'ctl-1');
      expect(t.stdout).not.toContain('\u001b');
      expect(t.stdout).toContain('evil\\u001b[2J\\nrow');
    });
  });

  describe('writes against engine A in another process (workflow-lease)', () => {
    it('signal: stored and delivered to the handler on A (NOTIFY wakes it)', async () => {
      const got = A.cmd.next((e) => e.event === 'delivered' && e.workflowId === 't-1' && e.name === 'add', 10_000, 'delivery');
      const r = await w('signal', 't-1', 'add', '--payload', '"apple"');
      expect(r.code).toBe(0);
      expect(r.stdout).toMatch(/^Signal "add" sent to t-1 \(message \d+; workflow running\)\.$/m);
      expect(await got).toMatchObject({ engine: 'engine-a', payload: 'apple' });
      expect(await A.cmd.call('query', { workflowId: 't-1', name: 'state' })).toMatchObject({ items: ['apple'] });
      const j = await json('signal', 't-1', 'add', '--payload', '"kiwi"');
      expect(j).toEqual({ workflowId: 't-1', signal: 'add', messageId: expect.any(String), status: 'running' });
      expect((await w('signal', 'missing-wf', 'add')).code).toBe(1);
    });

    it("cancel of a workflow A is running: the request is stored, A's code takes it and the run ends cancelled", async () => {
      // A workflow whose steps run on A (each step appends to the ledger table) and that does not
      // end on its own however slow the CLI's start is on a loaded machine.
      await A.cmd.call('start', { type: 'five-steps', input: { stepMs: 600, steps: 1000 }, opts: { workflowId: 'busy-1' } });
      const ledger = async (id: string) =>
        Number((await tdb.query<{ n: string }>('SELECT count(*) AS n FROM ledger WHERE workflow_id = $1', [id]))[0].n);
      await waitFor(async () => (await ledger('busy-1')) >= 1, 'busy-1 running its first step');
      const before = { t1: await claim('t-1'), busy: await claim('busy-1') };
      expect(before.busy.engine_id).toBe('engine-a');

      const r = await w('cancel', 'busy-1', '--reason', 'stop it');
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      // A cancel asks the workflow (docs/cancellation.md): usually still running when the CLI reads it.
      expect(r.stdout).toMatch(/^Cancelled busy-1 \(status (running|cancelled)\)\.\n$/);
      await waitFor(async () => (await status('busy-1')) === 'cancelled', 'busy-1 cancelled by its code on A', 20_000);
      const row = (await tdb.query<{ error: unknown }>(`SELECT error FROM weft.weft_workflows WHERE id = 'busy-1'`))[0];
      expect(row.error).toEqual({ name: 'WorkflowCancelledError', code: 'WEFT_WORKFLOW_CANCELLED', message: 'stop it' });
      // A ended it itself: the claim was not taken from it.
      expect((await claim('busy-1')).epoch).toBe(before.busy.epoch);
      const kinds = (
        await tdb.query<{ kind: string }>(`SELECT kind FROM weft.weft_operations WHERE workflow_id = 'busy-1' ORDER BY seq`)
      ).map((o) => o.kind);
      expect(kinds[kinds.length - 1]).toBe('cancelRequested');
      const ops = kinds.length;
      const stepsAtEnd = await ledger('busy-1');

      // A twin started now finishing all five steps: busy-1 started no step after its end, and committed nothing.
      await A.cmd.call('start', { type: 'five-steps', input: { stepMs: 600 }, opts: { workflowId: 'busy-2' } });
      await waitFor(async () => (await status('busy-2')) === 'completed', 'busy-2 completed', 20_000);
      expect(await ledger('busy-1')).toBe(stepsAtEnd);
      expect((await tdb.query(`SELECT 1 FROM weft.weft_operations WHERE workflow_id = 'busy-1'`)).length).toBe(ops);
      expect(await status('busy-1')).toBe('cancelled');
      // The CLI's engine took nothing over: A still holds the tally at the same epoch.
      expect(await claim('t-1')).toEqual(before.t1);
      // And cancelling it again says why not.
      const again = await w('cancel', 'busy-1');
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('WEFT_WORKFLOW_NOT_RUNNING');
    });

    it('suspend and resume: A lets go of the run, then reclaims it and finishes it on a signal', async () => {
      await startTally('sr-1');
      const t1 = await claim('t-1');
      const s = await json('suspend', 'sr-1', '--reason', 'maintenance');
      expect(s).toEqual({ workflowId: 'sr-1', status: 'suspended' });
      expect((await claim('sr-1')).engine_id).toBeNull();
      const d = await json<{ error: unknown }>('describe', 'sr-1');
      expect(d.error).toEqual({ name: 'WorkflowSuspended', message: 'maintenance' });
      expect((await w('suspend', 'sr-1')).code).toBe(1); // not running any more

      const r = await w('resume', 'sr-1');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('Resumed sr-1 (status running).\n');
      // The CLI registers no types: A's reclaim scan picks the running workflow up.
      await waitFor(async () => (await claim('sr-1')).engine_id === 'engine-a', 'A reclaiming sr-1', 10_000);
      await w('signal', 'sr-1', 'close', '--payload', '"done"');
      await waitFor(async () => (await status('sr-1')) === 'completed', 'sr-1 completed', 10_000);
      expect(await claim('t-1')).toEqual(t1);
      // The end of the run cleared its fence and left the claim row naming A (decision 0011): held by nobody.
      expect((await claim('sr-1')).engine_id).toBe('engine-a');
      const ended = await json<{ ownership: Record<string, unknown> }>('describe', 'sr-1');
      expect(ended.ownership).toEqual({
        mode: 'workflow-lease',
        holder: null,
        epoch: (await claim('sr-1')).epoch,
        expiresAt: null,
        expiresInMs: null,
      });
      expect((await w('describe', 'sr-1')).stdout).toMatch(/^owner\s+-$/m);
    });

    it("the CLI's engine never takes over an orphaned workflow", async () => {
      // A running workflow of a type nobody registers, whose holder died long ago. One statement:
      // between two, engine A's backfill could give the running row a claim row of its own first.
      await tdb.query(
        `WITH wf AS (
           INSERT INTO weft.weft_workflows (id, type, status, input, version) VALUES ('orphan-1', 'gone-type', 'running', 'null', 1))
         INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at)
         VALUES ('orphan-1', 7, 'dead-engine', now() - interval '1 hour', now() - interval '2 hours')`,
      );
      await startTally('victim-1');
      expect((await w('cancel', 'victim-1')).code).toBe(0);
      expect(await claim('orphan-1')).toEqual({ engine_id: 'dead-engine', epoch: '7' });
      const e = await json<{ engines: Array<{ engineId: string; expiredClaims: number }> }>('engines');
      expect(e.engines.find((x) => x.engineId === 'dead-engine')).toMatchObject({ expiredClaims: 1 });
      expect(e.engines.some((x) => x.engineId.startsWith('weft-cli:'))).toBe(false);
    });
  });

  describe('bulk cancel', () => {
    const N = 24;
    const running = async () =>
      Number(
        (await tdb.query<{ n: string }>(`SELECT count(*) AS n FROM weft.weft_workflows WHERE id LIKE 'bulk-%' AND status = 'running'`))[0]
          .n,
      );

    beforeAll(async () => {
      await Promise.all(
        Array.from({ length: N }, (_, i) => A.cmd.call('start', { type: 'tally', input: {}, opts: { workflowId: `bulk-${i}` } })),
      );
      await waitFor(async () => (await running()) === N, `${N} bulk workflows running`);
    });

    it('without --yes on a non-terminal stdin: prints the count, refuses (exit 2), cancels nothing', async () => {
      const r = await w('cancel', '--type', 'tally', '--status', 'running', '--id-prefix', 'bulk-');
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(`${N} workflow(s) match (type tally, status running, id prefix "bulk-").`);
      expect(r.stderr).toContain(`WEFT_CLI_CONFIRMATION_REQUIRED: Refusing to cancel ${N} workflow(s) without confirmation`);
      expect(r.stdout).toBe('');
      expect(await running()).toBe(N);
    });

    it('with --yes: cancels every match with progress on stderr and a summary on stdout', async () => {
      const r = await w('cancel', '--type', 'tally', '--status', 'running', '--id-prefix', 'bulk-', '--yes', '--reason', 'bulk');
      expect(r.code).toBe(0);
      expect(r.stderr).toContain(`${N}/${N} cancelled`);
      expect(r.stdout).toBe(`Cancelled ${N} of ${N} workflow(s).\n`);
      // Each was asked; A's code takes the requests and ends them (docs/cancellation.md).
      await waitFor(async () => (await running()) === 0, 'all bulk workflows cancelled', 20_000);
      const errors = await tdb.query<{ error: { message: string } }>(`SELECT error FROM weft.weft_workflows WHERE id LIKE 'bulk-%'`);
      expect(errors.every((e) => e.error.message === 'bulk')).toBe(true);
      // Nothing left to match.
      expect(await json('cancel', '--id-prefix', 'bulk-', '--yes')).toEqual({ matched: 0, cancelled: 0, skipped: 0, failed: [] });
      // Other tallies were left alone.
      expect(await status('t-2')).toBe('running');
    });
  });

  describe("ownership 'lease'", () => {
    const L = (...args: string[]) => weft([...args, '--schema', 'leased']);

    beforeAll(async () => {
      leaseEngine = await WeftEngine.create({
        database: { url: tdb.url, poolSize: 4 },
        schema: 'leased',
        ownership: 'lease',
        engineId: 'lease-holder',
        leaseTtl: 3000,
        leaseRenewInterval: 500,
        logger: quietLogger(),
      });
      leaseEngine.register(
        'waiter',
        class {
          async run(ctx: WorkflowContext) {
            await ctx.sleep('1h');
          }
        },
      );
      await leaseEngine.bootstrap();
      await leaseEngine.start('waiter', null, { workflowId: 'l-1' });
    });

    it('cancel, suspend and resume are refused (exit 1) without touching the lease; reads work', async () => {
      const lease = async () => (await tdb.query(`SELECT holder, epoch::text AS epoch FROM leased.weft_global_lease`))[0];
      const before = await lease();
      expect(before).toEqual({ holder: 'lease-holder', epoch: expect.any(String) });
      for (const cmd of ['cancel', 'suspend', 'resume']) {
        const r = await L(cmd, 'l-1');
        expect(r.code).toBe(1);
        expect(r.stderr).toContain('WEFT_CLI_LEASE_MODE');
        expect(r.stderr).toContain(`(lease-holder)`);
        expect(r.stderr).toContain(`POST <prefix>/workflows/<id>/${cmd}`);
      }
      const bulk = await L('cancel', '--type', 'waiter', '--yes');
      expect(bulk.code).toBe(1);
      expect(bulk.stderr).toContain('WEFT_CLI_LEASE_MODE');
      expect(await lease()).toEqual(before);
      expect((await tdb.query<{ status: string }>(`SELECT status FROM leased.weft_workflows WHERE id = 'l-1'`))[0].status).toBe('running');

      const e = JSON.parse((await L('engines', '--json')).stdout) as { mode: string; lease: Record<string, unknown> };
      expect(e.mode).toBe('lease');
      expect(e.lease).toMatchObject({ holder: 'lease-holder', epoch: before.epoch });
      expect((await L('engines')).stdout).toMatch(/^global lease: lease-holder \(epoch \d+, expires in/m);
      const d = JSON.parse((await L('describe', 'l-1', '--json')).stdout) as { ownership: Record<string, unknown> };
      expect(d.ownership).toMatchObject({ mode: 'lease', holder: 'lease-holder' });
    });
  });
});
