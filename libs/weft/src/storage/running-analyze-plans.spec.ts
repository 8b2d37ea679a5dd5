// A queue's running counts seek the queue's running rows whatever weft_workflows looked like at its
// last ANALYZE. Analyzed between bursts, with no workflow running, the planner took 'running' for
// absent, and the generic plans of the admission function and of the queue gauges counted a
// queue's (and each partition key's) running workflows by reading every running workflow of every
// queue and type through weft_workflows_status_type_idx, a heap visit each, once per key of a
// partitioned walk (docs/decisions/0056-running-counts-after-an-empty-analyze.md). Plans read
// through auto_explain (PL/pgSQL's statements are not reachable by EXPLAIN).
import { capturePlans, planNodes, type PlanNode, usePlanDatabase } from '../../../../test/support/plans.js';
import { QueueRepository } from './repositories/queue.repository.js';
import type { SqlClient } from './sql-client.js';

/** The indexes of weft_workflows a plan reads. */
const indexes = (plan: PlanNode) =>
  planNodes(plan).flatMap((n) => (n['Index Name']?.startsWith('weft_workflows') ? [n['Index Name']] : []));

describe('running counts after an ANALYZE that saw no running workflow (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: PlanNode[] = [];

  beforeAll(async () => {
    const insert = (n: number, status: string, queue: string | null, keyed: boolean, type = 't') =>
      env.db.query(
        `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
         SELECT $2 || '-' || coalesce($3, 'none') || '-' || $5 || '-' || g, $5, $2, 'null', 1, $3,
                CASE WHEN $4 THEN 'tenant-' || (g % 100) END, now() + (g || ' milliseconds')::interval
         FROM generate_series(1, $1::int) g`,
        [n, status, queue, keyed, type],
      );
    // Bursts that went through (running, then ended), vacuumed and analyzed once they had, then the next one.
    for (let burst = 0; burst < 3; burst++) {
      await insert(2000, 'running', 'parts', true);
      await insert(2000, 'running', 'plain', false);
      await insert(2000, 'running', null, false, 'other');
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed', id = $1 || id WHERE status = 'running'`, [`done${burst}-`]);
      await env.db.query('VACUUM ANALYZE weft.weft_workflows');
    }
    await insert(1000, 'enqueued', 'parts', true);
    await insert(1000, 'enqueued', 'plain', false);
    await insert(100, 'running', 'parts', true);
    await insert(40, 'running', 'plain', false);
    await insert(1000, 'running', null, false, 'other'); // long waits of a type without a queue
    plans = await capturePlans(env.db);
  });

  /** Every index of weft_workflows the plans of `run`'s statements read, in a transaction rolled back. */
  async function indexesOf(run: () => Promise<unknown>): Promise<string[]> {
    await env.db.query('BEGIN');
    try {
      plans.length = 0;
      await run();
      expect(plans.length).toBeGreaterThan(0);
      return [...new Set(plans.flatMap(indexes))].sort();
    } finally {
      await env.db.query('ROLLBACK');
    }
  }

  it.each([true, false])('the admission (partitioned: %s) counts through the running indexes, not status_type_idx', async (partitioned) => {
    const used = await indexesOf(() =>
      env.db.query(
        `SELECT * FROM weft.weft_queue_admit($1, 12, 50, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL, $2, $3, NULL, 0)`,
        [partitioned ? 'parts' : 'plain', partitioned, partitioned ? 2 : null],
      ),
    );
    expect(used).not.toContain('weft_workflows_status_type_idx');
    expect(used).toContain(partitioned ? 'weft_workflows_partition_running_idx' : 'weft_workflows_queue_running_idx');
  });

  it("the queue gauges' generic plan counts through queue_running_idx", async () => {
    // The statement as the repository sends it, prepared and explained (its generic plan).
    let text = '';
    const db = { manager: {}, query: async (sql: string) => ((text = sql), []) } as unknown as SqlClient;
    await new QueueRepository(db, 'weft').stats(['parts', 'plain']);
    await env.db.query('BEGIN');
    try {
      await env.db.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await env.db.query(`PREPARE gauges(varchar[], int) AS ${text}`);
      const [row] = (await env.db.query(`EXPLAIN (FORMAT JSON) EXECUTE gauges('{parts,plain}', 10000)`)).rows;
      const used = indexes((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan);
      expect(used).not.toContain('weft_workflows_status_type_idx');
      expect(used).toContain('weft_workflows_queue_running_idx');
    } finally {
      await env.db.query('ROLLBACK');
      await env.db.query('DEALLOCATE ALL');
    }
  });
});
