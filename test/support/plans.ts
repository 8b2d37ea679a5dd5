// EXPLAIN (FORMAT JSON) plans, for the specs that check which indexes a hot statement reaches.
import pg from 'pg';
import { openDatabase } from '../../libs/weft/src/storage/data-source.js';
import { AdvanceStatements } from '../../libs/weft/src/storage/repositories/advance-statements.js';
import { statementName } from '../../libs/weft/src/storage/sql-client.js';
import { createTestDatabase, type TestDatabase } from './database.js';

/** A node of a JSON plan, as far as the plan specs read it. */
export interface PlanNode {
  'Node Type': string;
  'Index Name'?: string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, the root first. */
export function planNodes(root: PlanNode): PlanNode[] {
  return [root, ...(root.Plans ?? []).flatMap(planNodes)];
}

/**
 * Has auto_explain report, on `db`'s session, the plan of every statement it runs, nested ones
 * included (PL/pgSQL's statements are not reachable by EXPLAIN), into the returned array: the
 * plans as run, generic ones where the session runs them so.
 */
export async function capturePlans<T extends PlanNode = PlanNode>(db: pg.Client): Promise<T[]> {
  const plans: T[] = [];
  await db.query(`LOAD 'auto_explain'`);
  for (const set of ['log_min_duration = 0', 'log_nested_statements = on', 'log_format = json', 'log_level = notice'])
    await db.query(`SET auto_explain.${set}`);
  db.on('notice', (m) => {
    const at = m.message?.indexOf('{') ?? -1;
    if (at >= 0) plans.push((JSON.parse(m.message!.slice(at)) as { Plan: T }).Plan);
  });
  return plans;
}

/**
 * The plans `capturePlans` caught into `plans` while `run` ran, in a transaction rolled back (the
 * tables stay as set up); generic plans when `generic`.
 */
export async function plansOf<T extends PlanNode>(db: pg.Client, plans: T[], run: () => Promise<unknown>, generic = false): Promise<T[]> {
  await db.query('BEGIN');
  try {
    if (generic) await db.query('SET LOCAL plan_cache_mode = force_generic_plan');
    plans.length = 0;
    await run();
    return [...plans];
  } finally {
    await db.query('ROLLBACK');
  }
}

/**
 * A plan spec's database: fresh and migrated (schema `weft`) before the file's tests, with one
 * client on it for the spec's statements and EXPLAINs (and capturePlans); both gone after them.
 */
export function usePlanDatabase(): { tdb: TestDatabase; db: pg.Client } {
  const env = {} as { tdb: TestDatabase; db: pg.Client };
  beforeAll(async () => {
    env.tdb = await createTestDatabase();
    await (await openDatabase({ database: { url: env.tdb.url }, schema: 'weft' })).close();
    env.db = new pg.Client({ connectionString: env.tdb.url });
    env.db.on('error', () => undefined);
    await env.db.connect();
  });
  afterAll(async () => {
    await env.db?.end();
    await env.tdb?.drop();
  });
  return env;
}

/**
 * The end commit of these workflows (at version 1, running in queue 'plain' of type 't'), each
 * handing its slot on, as the engine names and sends it: the statement whose plan the queue plan
 * specs read.
 */
export function endsHandingOff(workflowIds: string[]): pg.QueryConfig {
  const handoff = { queue: 'plain', pick: true, notifier: 'e', types: ['t'], engineId: null, ttlMs: null, graceMs: null };
  const ends = workflowIds.map((workflowId) => ({
    workflowId,
    expectedVersion: 1,
    status: 'completed' as const,
    completed: true,
    handoff,
  }));
  const { sql, params } = new AdvanceStatements('weft', () => 0).for(ends);
  return { name: statementName(sql), text: sql, values: params };
}

/**
 * $1 workflows of status $2 and type $3, ids `$2-$3-$4-g`, due in an hour: each debounced under its
 * own key ($5), waiting for one of 50 singleton keys ($6), or holding one ($7). The rows the
 * debounce and queued-singleton plan spec and probe analyze and fill.
 */
export function debounceRows(
  db: pg.ClientBase,
  n: number,
  status: string,
  type: string,
  tag: string,
  debounced: boolean,
  waits: boolean,
  holds = false,
): Promise<pg.QueryResult> {
  return db.query(
    `INSERT INTO weft.weft_workflows (id, type, status, input, version, start_at, debounce_key, singleton_wait, singleton_key, created_at)
     SELECT $2 || '-' || $3 || '-' || $4 || '-' || g, $3, $2, 'null', 1, now() + interval '1 hour',
            CASE WHEN $5 THEN 'key-' || $4 || '-' || g END, CASE WHEN $6 THEN 'wkey-' || (g % 50) END,
            CASE WHEN $7 THEN 'wkey-' || (g % 50) END, now() + (g || ' milliseconds')::interval
     FROM generate_series(1, $1::int) g`,
    [n, status, type, tag, debounced, waits, holds],
  );
}

/** Each pending workflow's delayed-start timer, as a start stores it. */
export function pendingTimers(db: pg.ClientBase): Promise<pg.QueryResult> {
  return db.query(`INSERT INTO weft.weft_timers (workflow_id, kind, seq, fire_at)
                   SELECT id, 'delayed-start', -1, start_at FROM weft.weft_workflows WHERE status = 'pending'`);
}
