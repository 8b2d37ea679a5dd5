// list({ attributes }) reaches its rows through the GIN index on weft_workflows.attributes (the
// partial index of migration 1734177840000), in the plan a pooled connection runs: custom and
// generic. With 50,000 workflows of 5,000 tenants a sequential scan would read every row per page.
import { planNodes, type PlanNode, usePlanDatabase } from '../../../../test/support/plans.js';
import { listStatement } from './repositories/workflow-list.js';
import { attributeQuery, parseWhere } from '../engine/attribute-filter.js';
import type { AttributeFilter } from '../common/types.js';

const ROWS = 50_000;

describe('list by attribute: the plan uses the GIN index (real PostgreSQL)', () => {
  const env = usePlanDatabase();

  beforeAll(async () => {
    await env.db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, attributes, created_at)
                    SELECT 'w' || g, 'order', CASE WHEN g % 4 = 0 THEN 'failed' ELSE 'completed' END, 'null', 1,
                           jsonb_build_object('tenant', g % 5000, 'amount', g % 1000),
                           now() - (g || ' seconds')::interval
                    FROM generate_series(1, ${ROWS}) g`);
    await env.db.query('ANALYZE');
  });

  const plan = async (filter: AttributeFilter, generic: boolean, extra: { statuses?: string[]; newest?: boolean } = {}) => {
    const { sql, params } = listStatement('weft', { attributes: attributeQuery(filter), limit: 101, ...extra } as never);
    await env.db.query(`SET plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    const res = await env.db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    return planNodes(res.rows[0]['QUERY PLAN'][0].Plan);
  };

  it.each([
    ['equality', { tenant: 7 }, {}],
    ['equality, failed ones, newest first', { tenant: 7 }, { statuses: ['failed'], newest: true }],
    ['the text form (number or text: an `in`)', parseWhere(['tenant=7']), {}],
    ['equality and a range', parseWhere(['tenant=7', 'amount>100']), {}],
  ] as const)('%s', async (_name, filter, extra) => {
    for (const generic of [false, true]) {
      const used = await plan(filter as AttributeFilter, generic, extra as never);
      expect(
        used.some((n) => n['Index Name'] === 'weft_workflows_attributes_idx'),
        `generic ${generic}: ${JSON.stringify(used.map((n) => [n['Node Type'], n['Index Name']]))}`,
      ).toBe(true);
      expect(used.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name'])).toEqual([]);
      // Not the creation-time index walked and filtered: what a page of one tenant took at 1,000,000 rows
      // without the fence (bench/attributes.ts; at this size the planner does not choose it either way).
      expect(used.filter((n) => n['Index Name'] === 'weft_workflows_created_idx')).toEqual([]);
    }
  });
});
