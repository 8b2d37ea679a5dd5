// The hand-off's UPDATE (an end commit of a plain queue's run making the next workflow running)
// reaches each picked row once, by its key, in the generic plan a pooled connection runs, whatever
// size the table had when last analyzed. With `id = ANY(the picked ids)` beside the join, a plan
// made after an ANALYZE of a small table read the whole table once per picked row: 50 scans of it
// for a generation of 50 ends (docs/decisions/0059-hand-off-update-by-key.md).
import { capturePlans, endsHandingOff, planNodes, plansOf, usePlanDatabase, type PlanNode } from '../../../../test/support/plans.js';

type Node = PlanNode & { 'Subplan Name'?: string; 'Actual Loops'?: number };

/** The reads of weft_workflows under the CTE `cte`: node type, index, and how many times each ran. */
const readsUnder = (root: Node, cte: string) =>
  planNodes(planNodes(root).find((n) => (n as Node)['Subplan Name'] === `CTE ${cte}`)!)
    .filter(
      (n) => (n['Relation Name'] === 'weft_workflows' && n['Node Type'].endsWith('Scan')) || n['Index Name']?.startsWith('weft_workflows'),
    )
    .map((n) => ({ node: n['Node Type'], index: n['Index Name'], loops: (n as Node)['Actual Loops'] }));

describe("the hand-off's UPDATE after an ANALYZE of a small table (real PostgreSQL)", () => {
  const env = usePlanDatabase();

  it.each([0, 100, 2000])('probes the primary key once per picked row (%i ended workflows analyzed)', async (ended) => {
    await env.db.query('TRUNCATE weft.weft_workflows CASCADE');
    const insert = (n: number, status: string, prefix: string) =>
      env.db.query(
        `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, created_at)
         SELECT $3 || g, 't', $2, 'null', 1, 'plain', now() + (g || ' milliseconds')::interval FROM generate_series(1, $1::int) g`,
        [n, status, prefix],
      );
    // As a bench's or a bursty queue's table is between bursts: analyzed with what ended, then a
    // generation of 50 running and a backlog behind them.
    await insert(ended, 'completed', 'done-');
    await env.db.query('VACUUM ANALYZE weft.weft_workflows');
    await insert(50, 'running', 'run-');
    await insert(1000, 'enqueued', 'enq-');
    const plans = await capturePlans<Node>(env.db);
    await env.db.query('SET auto_explain.log_analyze = on');
    await env.db.query('SET auto_explain.log_timing = off');
    const caught = await plansOf(
      env.db,
      plans,
      async () => {
        const { rows } = await env.db.query<{ handoff: unknown }>(endsHandingOff(Array.from({ length: 50 }, (_, i) => `run-${i + 1}`)));
        expect(rows.filter((r) => r.handoff !== null)).toHaveLength(50);
      },
      true,
    );
    const plan = caught.find((p) => planNodes(p).some((n) => (n as Node)['Subplan Name'] === 'CTE ho_upd'));
    expect(plan, 'the end commit was explained').toBeDefined();
    const reads = readsUnder(plan!, 'ho_upd');
    expect(reads, JSON.stringify(reads)).toEqual([{ node: 'Index Scan', index: 'weft_workflows_pkey', loops: 50 }]);
  });
});
