// The debounce's and the queued singletons' statements reach their rows by key (the debounce
// index, the singleton indexes, the primary key), whatever weft_workflows looked like at its last
// ANALYZE. Analyzed between bursts, with no workflow pending and no singleton key held, the
// planner took 'pending' for absent, and generic plans read every pending workflow through
// weft_workflows_status_type_idx: a debounced call that met a closed window (the detach), and
// each fire of a queued singleton start (its own row and the older waiters), and they scanned
// every live holder of every key of weft_workflows_singleton_idx
// (docs/decisions/0061-debounce-and-singleton-plans-after-an-empty-analyze.md).
import { capturePlans, planNodes, type PlanNode, usePlanDatabase } from '../../../../test/support/plans.js';
import { WorkflowDebounce } from './repositories/workflow-debounce.js';
import { type SqlClient, statementName } from './sql-client.js';

interface Node extends PlanNode {
  'Index Cond'?: string;
  Plans?: Node[];
}

/** The index scans of weft_workflows in a plan, as `index: its condition`. */
const scans = (plan: Node) =>
  (planNodes(plan) as Node[]).flatMap((n) =>
    n['Index Name']?.startsWith('weft_workflows') ? [`${n['Index Name']}: ${n['Index Cond'] ?? '(none)'}`] : [],
  );

describe('debounce and queued singleton plans after an ANALYZE that saw no pending workflow (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: Node[] = [];

  /** $1 rows of status $2, type $3, ids `$2-$3-$4-g`; debounced ($5), waiting for one of 50 keys ($6), or holding one ($7). */
  const insert = (n: number, status: string, type: string, tag: string, debounced: boolean, waits: boolean, holds = false) =>
    env.db.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, version, start_at, debounce_key, singleton_wait, singleton_key, created_at)
       SELECT $2 || '-' || $3 || '-' || $4 || '-' || g, $3, $2, 'null', 1, now() + interval '1 hour',
              CASE WHEN $5 THEN 'key-' || $4 || '-' || g END, CASE WHEN $6 THEN 'wkey-' || (g % 50) END,
              CASE WHEN $7 THEN 'wkey-' || (g % 50) END, now() + (g || ' milliseconds')::interval
       FROM generate_series(1, $1::int) g`,
      [n, status, type, tag, debounced, waits, holds],
    );
  /** Each pending workflow's delayed-start timer, as a start stores it. */
  const timers = () =>
    env.db.query(`INSERT INTO weft.weft_timers (workflow_id, kind, seq, fire_at)
                  SELECT id, 'delayed-start', -1, start_at FROM weft.weft_workflows WHERE status = 'pending'`);

  beforeAll(async () => {
    // Bursts that went through (debounced windows and queued singleton starts fired, ran and
    // ended; their keys held and let go), vacuumed and analyzed once they had, then the next one.
    for (let burst = 0; burst < 3; burst++) {
      await insert(2000, 'pending', 'd', `b${burst}`, true, false);
      await insert(2000, 'pending', 's', `b${burst}`, false, true);
      await timers();
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed', singleton_key = singleton_wait, singleton_wait = NULL
                          WHERE status = 'pending'`);
      await env.db.query(`DELETE FROM weft.weft_timers`);
      await env.db.query('VACUUM ANALYZE weft.weft_workflows, weft.weft_timers');
    }
    await insert(2000, 'pending', 'd', 'live', true, false); // open windows, one per key
    await insert(1000, 'pending', 's', 'live', false, true); // waiting for 50 keys
    await insert(50, 'running', 's', 'live', false, false, true); // their holders
    await timers();
    // One window that has closed: its start is due.
    await env.db.query(`UPDATE weft.weft_workflows SET start_at = now() - interval '1 second' WHERE id = 'pending-d-live-7'`);
    plans = await capturePlans<Node>(env.db);
  });

  /** A client that sends what a repository sends, as named statements (generic plans: plan_cache_mode below). */
  const client = {
    query: async (sql: string, params: unknown[] = []) =>
      (await env.db.query({ name: statementName(sql), text: sql, values: params })).rows,
  } as unknown as SqlClient;

  /** The index scans of weft_workflows in the generic plans of what `run` sends, in a transaction rolled back. */
  async function scansOf(run: () => Promise<unknown>): Promise<string[]> {
    await env.db.query('BEGIN');
    try {
      await env.db.query('SET LOCAL plan_cache_mode = force_generic_plan');
      plans.length = 0;
      await run();
      expect(plans.length).toBeGreaterThan(0);
      return [...new Set(plans.flatMap(scans))].sort();
    } finally {
      await env.db.query('ROLLBACK');
      await env.db.query('DEALLOCATE ALL');
    }
  }

  const expectByKey = (used: string[]) => {
    expect(used.filter((s) => s.startsWith('weft_workflows_status_type_idx'))).toEqual([]);
    expect(used.filter((s) => s.endsWith('(none)'))).toEqual([]);
  };

  it('a debounced call that meets a closed window detaches it by key and opens a new one', async () => {
    const debounce = new WorkflowDebounce(client, 'weft', () => 0);
    let started: { id: string; inserted: boolean } | undefined;
    const used = await scansOf(async () => {
      started = await debounce.start({
        id: 'new-window',
        type: 'd',
        input: 1,
        debounce: { key: 'key-live-7', delayMs: 60_000, maxDelayMs: null },
      } as unknown as Parameters<WorkflowDebounce['start']>[0]);
      const [old] = (await env.db.query(`SELECT debounce_key FROM weft.weft_workflows WHERE id = 'pending-d-live-7'`)).rows;
      expect(old.debounce_key).toBeNull();
    });
    expect(started).toMatchObject({ id: 'new-window', inserted: true });
    expectByKey(used);
  });
});
