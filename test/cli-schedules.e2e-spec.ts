import { createTestDatabase, TestDatabase } from './support/database.js';
import { runCli, type Ran } from './support/cli.js';
import { quietLogger, waitFor } from './support/engine.js';
import type { WorkflowContext } from '../libs/weft/src/common/types.js';
import { WeftEngine } from '../libs/weft/src/engine/engine.js';
import type { WeftEngineOptions } from '../libs/weft/src/engine/options.js';

/**
 * `weft schedules list|describe|pause|unpause|trigger` (docs/cli.md) run as a child process,
 * from source, against schedules an engine of this test created: on schema 'weft' (ownership
 * 'workflow-lease', the engine runs the type), 'quiet' (ownership 'none', no engine running
 * while the CLI reads and triggers) and 'leased' (ownership 'lease', writes refused).
 */

class Report {
  async run(ctx: WorkflowContext, input: unknown) {
    return { ran: ctx.workflowId, input };
  }
}

describe('weft schedules', () => {
  let tdb: TestDatabase;
  const engines: WeftEngine[] = [];

  const weft = (args: string[]): Promise<Ran> => runCli(args, { env: { DATABASE_URL: tdb.url } });
  const w = (...args: string[]) => weft([...args, '--schema', 'weft']);
  const json = async <T = Record<string, unknown>>(...args: string[]): Promise<T> => {
    const r = await w(...args, '--json');
    if (r.code !== 0) throw new Error(`weft ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    expect(r.stderr).toBe('');
    return JSON.parse(r.stdout) as T;
  };
  const engine = async (schema: string, opts: WeftEngineOptions = {}) => {
    const e = await WeftEngine.create({
      database: { url: tdb.url, poolSize: 4 },
      schema,
      logger: quietLogger(),
      timerPollInterval: 50,
      shutdownGracePeriod: 0,
      ...opts,
    });
    engines.push(e);
    e.register('report', Report);
    await e.bootstrap();
    return e;
  };
  const row = async (schema: string, id: string) =>
    (
      await tdb.query<{ type: string; status: string; output: unknown }>(
        `SELECT type, status, output FROM ${schema}.weft_workflows WHERE id = $1`,
        [id],
      )
    )[0];
  const paused = async (id: string) =>
    (await tdb.query<{ paused: boolean }>('SELECT paused FROM weft.weft_schedules WHERE id = $1', [id]))[0].paused;
  /** What engine.schedules.describe() gives, as JSON (dates as ISO strings). */
  const described = async (e: WeftEngine, id: string) => JSON.parse(JSON.stringify(await e.schedules.describe(id))) as unknown;

  let A: WeftEngine;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    A = await engine('weft', { ownership: 'workflow-lease', engineId: 'engine-a' });
    await A.schedules.create({ id: 'nightly', workflowType: 'report', cron: '0 3 * * *', timezone: 'Europe/Berlin', input: { kind: 'n' } });
    // Far from firing while the test runs: 30 days, aligned to the Unix epoch.
    await A.schedules.create({ id: 'pulse', workflowType: 'report', every: '30d' });
  });

  afterAll(async () => {
    await Promise.all(engines.map((e) => e.dispose()));
    await tdb?.drop();
  });

  describe('reads', () => {
    it('list: a table with rule, time zone, paused, next fire and last run; --json items; paging', async () => {
      const nightly = await A.schedules.describe('nightly');
      const t = await w('schedules', 'list');
      expect(t.code).toBe(0);
      expect(t.stderr).toBe('');
      const lines = t.stdout.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^ID\s+WORKFLOW TYPE\s+CRON \/ EVERY\s+TIMEZONE\s+PAUSED\s+NEXT FIRE\s+LAST RUN$/);
      expect(lines[1]).toMatch(
        new RegExp(`^nightly\\s+report\\s+0 3 \\* \\* \\*\\s+Europe/Berlin\\s+no\\s+${nightly.nextFireTimes[0].toISOString()}\\s+-$`),
      );
      expect(lines[2]).toMatch(/^pulse\s+report\s+every 30d\s+-\s+no\s+\d{4}-\d\d-\d\dT\S+Z\s+-$/);
      expect(lines).toHaveLength(3);

      const all = await json<{ items: unknown[]; nextCursor: string | null }>('schedules', 'list');
      expect(all).toEqual({ items: [await described(A, 'nightly'), await described(A, 'pulse')], nextCursor: null });

      const first = await w('schedules', 'list', '--limit', '1', '--json');
      expect(JSON.parse(first.stdout)).toMatchObject({ items: [{ id: 'nightly' }], nextCursor: 'nightly' });
      expect(first.stderr).toBe('More: add --after nightly\n');
      expect(await json('schedules', 'list', '--limit', '1', '--after', 'nightly')).toMatchObject({
        items: [{ id: 'pulse', everyMs: 30 * 86_400_000, cron: null }],
        nextCursor: null,
      });
    });

    it('describe: the definition, the next fire times and the recent runs; --json is engine.schedules.describe()', async () => {
      expect(await json('schedules', 'describe', 'nightly')).toEqual(await described(A, 'nightly'));
      const t = await w('schedules', 'describe', 'nightly');
      expect(t.code).toBe(0);
      expect(t.stdout).toMatch(/^id\s+nightly$/m);
      expect(t.stdout).toMatch(/^workflow type\s+report$/m);
      expect(t.stdout).toMatch(/^cron \/ every\s+0 3 \* \* \*$/m);
      expect(t.stdout).toMatch(/^timezone\s+Europe\/Berlin$/m);
      expect(t.stdout).toMatch(/^input\s+\{"kind":"n"\}$/m);
      expect(t.stdout).toMatch(/^paused\s+no$/m);
      expect(t.stdout).toMatch(/^next fires\s+(\d{4}-\S+Z(, )?){5}$/m);
      expect(t.stdout).toMatch(/^last run\s+-$/m);
    });
  });

  describe("writes (ownership 'workflow-lease', engine A runs the type)", () => {
    it('pause and unpause: written to the database, shown by list and describe', async () => {
      const p = await w('schedules', 'pause', 'nightly');
      expect(p.stderr).toBe('');
      expect(p.code).toBe(0);
      expect(p.stdout).toBe('Paused schedule nightly: it fires no more until unpaused.\n');
      expect(await paused('nightly')).toBe(true);
      expect((await w('schedules', 'list')).stdout).toMatch(/^nightly\s+report\s+0 3 \* \* \*\s+Europe\/Berlin\s+yes\s+-\s+-$/m);
      expect((await A.schedules.describe('nightly')).paused).toBe(true);

      const u = await w('schedules', 'unpause', 'nightly');
      expect(u.code).toBe(0);
      const next = (await A.schedules.describe('nightly')).nextFireTimes[0].toISOString();
      expect(u.stdout).toBe(`Unpaused schedule nightly: next fire ${next}.\n`);
      expect(await paused('nightly')).toBe(false);

      const pj = await json<{ id: string; paused: boolean; nextFireTimes: string[] }>('schedules', 'pause', 'pulse');
      expect(pj).toMatchObject({ id: 'pulse', paused: true, nextFireTimes: [] });
      expect(await paused('pulse')).toBe(true);
      expect(await json('schedules', 'unpause', 'pulse')).toMatchObject({ id: 'pulse', paused: false });
      expect(await paused('pulse')).toBe(false);
    });

    it('trigger: prints the workflow id; engine A, which runs the type, starts and runs it', async () => {
      const t = await w('schedules', 'trigger', 'nightly');
      expect(t.stderr).toBe('');
      expect(t.code).toBe(0);
      const m = /^Triggered schedule nightly: workflow (nightly@\d{4}-\d\d-\d\dT[\d:.]+Z)\.\n$/.exec(t.stdout);
      expect(m).not.toBeNull();
      const id = m![1];
      await waitFor(async () => (await row('weft', id))?.status === 'completed', `${id} completed on engine A`);
      expect((await row('weft', id)).output).toEqual({ ran: id, input: { kind: 'n' } });

      const j = await json<{ scheduleId: string; workflowId: string }>('schedules', 'trigger', 'nightly');
      expect(j).toEqual({ scheduleId: 'nightly', workflowId: expect.stringMatching(/^nightly@/) });
      expect(j.workflowId).not.toBe(id);
      await waitFor(async () => (await row('weft', j.workflowId))?.status === 'completed', `${j.workflowId} completed`);

      const d = await json<{ recentRuns: Array<Record<string, unknown>> }>('schedules', 'describe', 'nightly');
      expect(d.recentRuns).toEqual([
        { fireAt: expect.any(String), workflowId: j.workflowId, outcome: 'triggered', status: 'completed' },
        { fireAt: expect.any(String), workflowId: id, outcome: 'triggered', status: 'completed' },
      ]);
      expect((await w('schedules', 'list')).stdout).toMatch(/^nightly\s.*\scompleted \(triggered\)$/m);
      // The CLI's engine took no claim: the runs were A's.
      const holders = await tdb.query<{ engine_id: string | null }>(
        `SELECT DISTINCT engine_id FROM weft.weft_workflow_claims WHERE workflow_id LIKE 'nightly@%'`,
      );
      expect(holders.every((h) => h.engine_id === null || h.engine_id === 'engine-a')).toBe(true);
    });
  });

  describe('errors', () => {
    it.concurrent.for(['describe', 'pause', 'unpause', 'trigger'])(
      'schedules %s of a missing schedule: exit 1 with WEFT_SCHEDULE_NOT_FOUND',
      async (cmd, { expect }) => {
        const r = await w('schedules', cmd, 'no-such-schedule');
        expect(r.code).toBe(1);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(/^weft: WEFT_SCHEDULE_NOT_FOUND: No schedule "no-such-schedule"\. /);
        const j = await w('schedules', cmd, 'no-such-schedule', '--json');
        expect(j.code).toBe(1);
        expect(JSON.parse(j.stderr)).toEqual({
          error: { code: 'WEFT_SCHEDULE_NOT_FOUND', name: 'ScheduleNotFoundError', message: expect.stringContaining('no-such-schedule') },
        });
      },
    );

    it.concurrent.for([
      [['schedules'], '"weft schedules" needs a subcommand: list, describe, pause, unpause, trigger'],
      [['schedules', 'frob'], 'Unknown command "schedules frob"'],
      [['schedules', 'describe'], '"weft schedules describe" needs <id>'],
      [['schedules', 'trigger', 'a', 'b'], '"weft schedules trigger" takes 1 argument(s), got 2'],
      [['schedules', 'list', '--limit', '0'], '--limit must be an integer from 1 to 1000'],
      [['schedules', 'list', '--bogus'], "Unknown option '--bogus'"],
      [['schedules', 'pause', 'x'.repeat(201)], 'WEFT_INVALID_ARGUMENT'],
      [['help', 'schedules', 'frob'], 'Unknown command "schedules frob"'],
    ] as Array<[string[], string]>)('%j is bad usage: exit 2, nothing on stdout', async ([args, reason], { expect }) => {
      const r = await w(...args);
      expect(r.stderr).toContain(reason);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
    });

    it('help: the group and each command', async () => {
      const [all, group, one, viaHelp] = await Promise.all([
        weft(['--help']),
        weft(['schedules', '--help']),
        weft(['schedules', 'list', '--help']),
        weft(['help', 'schedules', 'trigger']),
      ]);
      for (const c of ['list', 'describe', 'pause', 'unpause', 'trigger']) {
        expect(all.stdout).toContain(`  schedules ${c} `);
        expect(group.stdout).toContain(`weft schedules ${c}`);
      }
      expect(one.stdout).toContain('--after ID');
      expect(viaHelp.stdout).toContain('weft schedules trigger <id>');
      expect([all.code, group.code, one.code, viaHelp.code]).toEqual([0, 0, 0, 0]);
    });
  });

  describe("ownership 'none', with no engine running", () => {
    it('reads work, and a trigger is left on the schedule for the next engine running the type to start', async () => {
      const first = await engine('quiet');
      await first.schedules.create({ id: 'q', workflowType: 'report', cron: '0 0 1 1 *' });
      await first.dispose();

      const Q = (...args: string[]) => weft([...args, '--schema', 'quiet', '--json']);
      const list = await Q('schedules', 'list');
      expect(list.code).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject({ items: [{ id: 'q', cron: '0 0 1 1 *', paused: false }] });
      const t = await Q('schedules', 'trigger', 'q');
      expect(t.code).toBe(0);
      const { workflowId } = JSON.parse(t.stdout) as { workflowId: string };
      // Not started by the CLI (it does not know the type's queue): the schedule keeps the fire time.
      expect(await row('quiet', workflowId)).toBeUndefined();
      const pending = await tdb.query<{ pending_triggers: string[] }>(`SELECT pending_triggers FROM quiet.weft_schedules WHERE id = 'q'`);
      expect(pending).toEqual([{ pending_triggers: [workflowId.slice('q@'.length)] }]);

      await engine('quiet');
      await waitFor(async () => (await row('quiet', workflowId))?.status === 'completed', `${workflowId} completed`);
    });
  });

  describe("ownership 'lease'", () => {
    it('pause, unpause and trigger are refused (exit 1) pointing at the HTTP API; reads work', async () => {
      const holder = await engine('leased', { ownership: 'lease', engineId: 'lease-holder', leaseTtl: 3000, leaseRenewInterval: 500 });
      await holder.schedules.create({ id: 'l', workflowType: 'report', every: '30d' });
      for (const cmd of ['pause', 'unpause', 'trigger']) {
        const r = await weft(['schedules', cmd, 'l', '--schema', 'leased']);
        expect(r.code).toBe(1);
        expect(r.stderr).toContain('WEFT_CLI_LEASE_MODE');
        expect(r.stderr).toContain(`(lease-holder) may ${cmd} schedules`);
        expect(r.stderr).toContain(`POST <prefix>/schedules/<id>/${cmd}`);
      }
      expect((await holder.schedules.describe('l')).recentRuns).toEqual([]);
      const d = await weft(['schedules', 'describe', 'l', '--schema', 'leased']);
      expect(d.code).toBe(0);
      expect(d.stdout).toMatch(/^cron \/ every\s+every 30d$/m);
    });
  });
});
