// engine.queuePartitions reads a queue's keys with work through the two partial indexes of the
// partition keys (migration 1734178039000), index-only, in the plan a pooled connection runs:
// custom and generic. 10,000 enqueued over 100 keys, 200 running, beside 50,000 ended rows and
// another queue's backlog: a scan of the table would read them all on every dashboard refresh.
import { planNodes, type PlanNode, usePlanDatabase } from '../../../../test/support/plans.js';
import { queuePartitionsSql } from './repositories/workflow-partitions.js';

describe("a queue's partition keys: the plan uses the partition indexes (real PostgreSQL)", () => {
  const env = usePlanDatabase();

  beforeAll(async () => {
    await env.db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
                    SELECT 'p' || g, 'export', CASE WHEN g <= 200 THEN 'running' ELSE 'enqueued' END, 'null', 1, 'exports',
                           'tenant-' || (g % 100), now() - (g || ' seconds')::interval
                    FROM generate_series(1, 10200) g`);
    await env.db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, created_at)
                    SELECT 'o' || g, 'order', 'enqueued', 'null', 1, 'payments', now() FROM generate_series(1, 5000) g`);
    await env.db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at, completed_at)
                    SELECT 'c' || g, 'export', 'completed', 'null', 1, 'exports', 'tenant-' || (g % 100), now(), now()
                    FROM generate_series(1, 50000) g`);
    await env.db.query('VACUUM ANALYZE weft.weft_workflows');
  });

  it.each([false, true])('generic plan: %s', async (generic) => {
    await env.db.query(`SET plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    const res = await env.db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${queuePartitionsSql('weft')}`, [
      'exports',
      20,
    ]);
    const scans = planNodes(res.rows[0]['QUERY PLAN'][0].Plan).filter((n) => n['Relation Name'] === 'weft_workflows');
    expect(scans.map((n) => [n['Node Type'], n['Index Name']]).sort()).toEqual([
      ['Index Only Scan', 'weft_workflows_partition_enqueued_idx'],
      ['Index Only Scan', 'weft_workflows_partition_running_idx'],
    ]);
  });
});
