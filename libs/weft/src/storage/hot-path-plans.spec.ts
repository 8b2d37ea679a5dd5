// The hot path's statements reach the rows they write through the tables' keys in the generic
// plans every pooled connection runs after its 5th use of a statement, with the tables as a busy
// engine has them (thousands of rows, analyzed). A sequential scan of weft_workflows in one of
// them is paid on every commit and grows with the table: the refusal reason of a fenced advance
// was written as an EXISTS, which the planner turned into a hashed subplan that read the whole
// table on every commit of a `workflow-lease` engine (seen with perf: 45% of PostgreSQL's time).
// Plans are judged here, not times (docs/performance.md).
import pg from 'pg';
import { useTestEngines } from '../../../../test/support/engine.js';
import { advanceParams, advanceSql } from './repositories/workflow-advance.js';
import { loneAdvanceSql } from './repositories/workflow-advance-lone.js';
import type { AdvanceCommand } from './types.js';
import { isLoneRecord, loneAdvanceParams, shapeKeyOf, shapeOf } from './repositories/advance-shapes.js';

const ROWS = 3000;
const BIG_TABLES = ['weft_workflows', 'weft_operations', 'weft_workflow_claims', 'weft_messages', 'weft_timers'];

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

function seqScans(root: PlanNode): string[] {
  const out: string[] = [];
  const walk = (n: PlanNode) => {
    if (n['Node Type'] === 'Seq Scan' && n['Relation Name'] && BIG_TABLES.includes(n['Relation Name'])) out.push(n['Relation Name']);
    for (const c of n.Plans ?? []) walk(c);
  };
  walk(root);
  return out;
}

class Noop {
  async run() {
    return 1;
  }
}

const fence = { engineId: 'engine-a', epoch: '1' };

/** Which start text `text` is, if it is one: the lone form (workflow-start-lone.ts) or the general one. */
const startForm = (text: string): 'lone' | 'general' | undefined =>
  !text.includes('(id, type, status, input, parent_id') ? undefined : text.includes('json_to_recordset') ? 'general' : 'lone';

/** The advances a run sends, by shape: a step's record, a wait with its timer, a delivery, the terminal commit. */
const commands: Record<string, AdvanceCommand> = {
  'step record (fenced)': {
    workflowId: 'w1',
    expectedVersion: 1,
    operations: [{ seq: 0, kind: 'step', name: 'a', status: 'completed', result: 1 }],
    fence,
  },
  'sleep with its timer (fenced)': {
    workflowId: 'w2',
    expectedVersion: 1,
    operations: [{ seq: 0, kind: 'step', name: 'a', status: 'completed', result: 1 }],
    timers: [{ kind: 'sleep', seq: 1, delayMs: 1000 }],
    fence,
  },
  'signal consumed, timer deleted (fenced)': {
    workflowId: 'w3',
    expectedVersion: 1,
    operations: [{ seq: 1, kind: 'waitForSignal', name: 'go', status: 'completed', result: 1 }],
    consume: [{ id: '1', seq: 1 }],
    deleteTimers: [{ kind: 'message-timeout', seq: 1 }],
    fence,
  },
  'terminal with release and a child notice (fenced)': {
    workflowId: 'w4',
    expectedVersion: 1,
    operations: [{ seq: 2, kind: 'step', name: 'c', status: 'completed', result: 1 }],
    status: 'completed',
    output: { value: 1 },
    completed: true,
    clearTimers: true,
    messages: [{ workflowId: 'w5', kind: 'child', name: 'w4', payload: { status: 'completed' } }],
    fence,
    release: true,
  },
  'step record (ownership none)': {
    workflowId: 'w6',
    expectedVersion: 1,
    operations: [{ seq: 0, kind: 'step', name: 'a', status: 'completed', result: 1 }],
  },
};

/** Explains a statement as a pooled connection runs it after its 5th use (plan_cache_mode is forced on `db`). */
async function genericPlan(db: pg.Client, name: string, sql: string, params: unknown[]): Promise<PlanNode> {
  await db.query(`PREPARE ${name} AS ${sql}`);
  const args = params.map((p) => (p === null ? 'NULL' : db.escapeLiteral(String(p))));
  const [plan] = (await db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) EXECUTE ${name}(${args.join(', ')})`))
    .rows[0]['QUERY PLAN'];
  return plan.Plan;
}

describe('hot-path statements: generic plans reach rows by key (real PostgreSQL)', () => {
  const env = useTestEngines();
  let db: pg.Client;
  /** The start statements as an engine sends them, with their parameters, by ownership mode and form. */
  const starts = new Map<string, { sql: string; params: unknown[] }>();
  const ticks = new Map<string, { sql: string; params: unknown[] }>();

  beforeAll(async () => {
    for (const ownership of ['none', 'workflow-lease'] as const) {
      const engine = await env.pool.create({ ownership, engineId: 'engine-a' }, (e) => e.register('noop', Noop));
      await engine.bootstrap();
      const query = pg.Pool.prototype.query;
      const spy = vi.spyOn(pg.Pool.prototype, 'query').mockImplementation(function (this: pg.Pool, ...args: unknown[]) {
        const c = args[0] as { text?: string; values?: unknown[] };
        if (typeof c?.text !== 'string') return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
        const form = startForm(c.text);
        if (form) starts.set(`${ownership}, ${form}`, { sql: c.text, params: c.values ?? [] });
        // The background tick's statements: due timers, and the owner-side poll of buffered messages.
        if (c.text.includes('FOR UPDATE SKIP LOCKED') && c.text.includes('weft_timers'))
          ticks.set(`due timers (ownership ${ownership})`, { sql: c.text, params: c.values ?? [] });
        if (c.text.includes('GROUP BY m.workflow_id'))
          ticks.set(`message poll (ownership ${ownership})`, { sql: c.text, params: c.values ?? [] });
        return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
      });
      try {
        await (await engine.start('noop', {}, { workflowId: `start-${ownership}` })).result();
        // With its deadline's timer: the general statement, for one workflow.
        await (await engine.start('noop', {}, { workflowId: `start-${ownership}-t`, executionTimeout: '1h' })).result();
        await engine.runMaintenance();
      } finally {
        spy.mockRestore();
      }
      await engine.dispose();
    }
    db = new pg.Client({ connectionString: env.tdb.url });
    await db.connect();
    // A busy engine's tables: running and ended workflows, their histories, claims, timers, messages.
    await db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, fence_epoch)
                    SELECT 'w' || g, 'noop', CASE WHEN g % 3 = 0 THEN 'completed' ELSE 'running' END, 'null', 1, 1
                    FROM generate_series(1, ${ROWS}) g`);
    await db.query(`INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result)
                    SELECT 'w' || g, s, 'step', 'a', 'completed', '1' FROM generate_series(1, ${ROWS}) g, generate_series(0, 2) s
                    WHERE g > 10`);
    await db.query(`INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at)
                    SELECT 'w' || g, 1, 'engine-a', now() + interval '1 hour' FROM generate_series(1, ${ROWS}) g`);
    await db.query(`INSERT INTO weft.weft_timers (workflow_id, kind, seq, fire_at)
                    SELECT 'w' || g, 'sleep', 1, now() + interval '1 hour' FROM generate_series(10, ${ROWS}) g`);
    await db.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name, payload)
                    SELECT 'w' || (g % ${ROWS} + 1), 'signal', 'go', '1' FROM generate_series(1, ${ROWS}) g`);
    await db.query('ANALYZE');
    await db.query('SET plan_cache_mode = force_generic_plan');
  });

  afterAll(async () => db?.end());

  const cases = Object.keys(commands).flatMap((name) => [
    [name, 'alone'],
    [name, 'in a batch of two'],
  ]);
  it.each(cases)('%s, %s: no sequential scan of a big table', async (name, how) => {
    const cmd = commands[name];
    const batch = how === 'alone' ? [cmd] : [cmd, { ...cmd, workflowId: 'w9' }];
    const sql = advanceSql('weft', shapeOf(cmd), batch.length === 1);
    const plan = await genericPlan(db, `adv_${cases.findIndex(([n, h]) => n === name && h === how)}`, sql, advanceParams(batch));
    expect(seqScans(plan)).toEqual([]);
  });

  // The engine's text for a lone step record or plain terminal commit (workflow-advance-lone.ts).
  const lone = Object.keys(commands).filter((name) => isLoneRecord([commands[name]], shapeKeyOf(commands[name])));
  it('the lone form covers the step records', () => expect(lone).toEqual(['step record (fenced)', 'step record (ownership none)']));
  it.each(lone)('%s, the lone form: no sequential scan of a big table', async (name) => {
    const cmd = commands[name];
    const plan = await genericPlan(
      db,
      `lone_${lone.indexOf(name)}`,
      loneAdvanceSql('weft', shapeOf(cmd)),
      loneAdvanceParams(cmd, shapeKeyOf(cmd)),
    );
    expect(seqScans(plan)).toEqual([]);
  });

  it.each(['none, lone', 'none, general', 'workflow-lease, lone', 'workflow-lease, general'])(
    'the start statement (ownership %s): no sequential scan of a big table',
    async (key) => {
      const start = starts.get(key);
      expect(start).toBeDefined();
      const ownership = key.split(',')[0];
      const params = start!.params.map((p, i) => (i === 0 ? String(p).replaceAll(`start-${ownership}`, 'w-new') : p));
      expect(seqScans(await genericPlan(db, `start_${key.replace(/\W+/g, '_')}`, start!.sql, params))).toEqual([]);
    },
  );

  it.each([
    'due timers (ownership none)',
    'due timers (ownership workflow-lease)',
    'message poll (ownership none)',
    'message poll (ownership workflow-lease)',
  ])('%s, every tick: no sequential scan of weft_workflows or the claims', async (name) => {
    const tick = ticks.get(name);
    expect(tick).toBeDefined();
    const params = tick!.params.map((p) => (Array.isArray(p) ? `{${p.join(',')}}` : p));
    const plan = await genericPlan(db, `tick_${[...ticks.keys()].indexOf(name)}`, tick!.sql, params);
    expect(seqScans(plan).filter((t) => t === 'weft_workflows' || t === 'weft_workflow_claims')).toEqual([]);
  });

  it('a refused fence still reads as a fence, a refused version as a version (the reason the plans must not cost)', async () => {
    const sql = advanceSql('weft', shapeOf(commands['step record (fenced)']), true);
    const run = async (c: AdvanceCommand) => (await db.query(sql, advanceParams([c]))).rows[0];
    const stale = await run({ ...commands['step record (fenced)'], workflowId: 'w7', fence: { engineId: 'engine-a', epoch: '0' } });
    expect({ version: stale.version, fenced: stale.fenced }).toEqual({ version: null, fenced: false });
    const behind = await run({ ...commands['step record (fenced)'], workflowId: 'w8', expectedVersion: 0 });
    expect({ version: behind.version, fenced: behind.fenced }).toEqual({ version: null, fenced: true });
    const ok = await run({ ...commands['step record (fenced)'], workflowId: 'w9' });
    expect(ok.version).toBe(2);
  });
});

describe('hot-path statements on tables never analyzed: one command or start is a probe by key (real PostgreSQL)', () => {
  // A fresh deployment's first thousands of workflows, before any ANALYZE (autovacuum off, or not
  // yet): an array of ids of unknown length is estimated at 10, and for 10 ids the generic plan
  // of a table of 50-odd pages is a sequential scan (0.4 ms of a 0.6 ms commit at 3,000 rows).
  // The commits of one workflow at a time (all of them at low load) must not pay it.
  const env = useTestEngines();
  let db: pg.Client;
  const starts = new Map<string, { sql: string; params: unknown[] }>();

  beforeAll(async () => {
    const engine = await env.pool.create({ ownership: 'none' }, (e) => e.register('noop', Noop));
    await engine.bootstrap();
    const query = pg.Pool.prototype.query;
    const spy = vi.spyOn(pg.Pool.prototype, 'query').mockImplementation(function (this: pg.Pool, ...args: unknown[]) {
      const c = args[0] as { text?: string; values?: unknown[] };
      const form = typeof c?.text === 'string' ? startForm(c.text) : undefined;
      if (form) starts.set(form, { sql: c.text!, params: c.values ?? [] });
      return (query as (...a: unknown[]) => unknown).apply(this, args) as never;
    });
    try {
      await (await engine.start('noop', {}, { workflowId: 'the-start' })).result();
      await (await engine.start('noop', {}, { workflowId: 'the-start-t', executionTimeout: '1h' })).result();
    } finally {
      spy.mockRestore();
    }
    await engine.dispose();
    db = new pg.Client({ connectionString: env.tdb.url });
    await db.connect();
    for (const t of BIG_TABLES) await db.query(`ALTER TABLE weft.${t} SET (autovacuum_enabled = false)`);
    await db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version)
                    SELECT 'w' || g, 'noop', 'running', '{"n": 1}', 1 FROM generate_series(1, ${ROWS}) g`);
    await db.query('SET plan_cache_mode = force_generic_plan');
  });

  afterAll(async () => db?.end());

  it('a lone step record', async () => {
    const cmd = commands['step record (ownership none)'];
    const plan = await genericPlan(db, 'lone', advanceSql('weft', shapeOf(cmd), true), advanceParams([cmd]));
    expect(seqScans(plan)).toEqual([]);
  });

  it('a lone step record, the lone form', async () => {
    const cmd = commands['step record (ownership none)'];
    const plan = await genericPlan(db, 'lone_form', loneAdvanceSql('weft', shapeOf(cmd)), loneAdvanceParams(cmd, shapeKeyOf(cmd)));
    expect(seqScans(plan)).toEqual([]);
  });

  it.each(['lone', 'general'])('a start, the %s form', async (form) => {
    const start = starts.get(form);
    expect(start).toBeDefined();
    const params = start!.params.map((p, i) => (i === 0 ? String(p).replaceAll('the-start', 'w-new') : p));
    expect(seqScans(await genericPlan(db, `start_${form}`, start!.sql, params))).toEqual([]);
  });
});
