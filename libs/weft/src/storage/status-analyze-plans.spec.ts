// The admission's plans stay seeks in the queue indexes whatever weft_workflows looked like at its
// last ANALYZE. Analyzed between bursts, with no workflow enqueued (as autovacuum finds a queue),
// the planner took 'enqueued' for absent, and the generic plans of the admission and of the end
// commit's hand-off read every enqueued row through weft_workflows_status_type_idx and sorted
// them, on each step of a partitioned walk (35-40 ms a call at 900 enqueued). That index holds no
// enqueued row since (docs/decisions/0052-admission-plans-after-an-empty-analyze.md). Plans read
// through auto_explain, as queue-admit-plans.spec.ts does (PL/pgSQL's statements are not
// reachable by EXPLAIN).
import { capturePlans, endsHandingOff, usePlanDatabase } from '../../../../test/support/plans.js';

interface Node {
  'Index Name'?: string;
  'Relation Name'?: string;
  'Node Type': string;
  Plans?: Node[];
}
const nodes = (n: Node): Node[] => [n, ...(n.Plans ?? []).flatMap(nodes)];
/** The indexes of weft_workflows a plan reads. */
const indexes = (plan: Node) => [
  ...new Set(nodes(plan).flatMap((n) => (n['Index Name']?.startsWith('weft_workflows') ? [n['Index Name']] : []))),
];

describe('admission plans after an ANALYZE that saw no enqueued workflow (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: Node[] = [];

  beforeAll(async () => {
    const insert = (n: number, status: string, queue: string, keyed: boolean) =>
      env.db.query(
        `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
         SELECT $2 || '-' || $3 || '-' || g, 't', $2, 'null', 1, $3, CASE WHEN $4 THEN 'tenant-' || (g % 100) END,
                now() + (g || ' milliseconds')::interval
         FROM generate_series(1, $1::int) g`,
        [n, status, queue, keyed],
      );
    // Bursts that went through (enqueued, then ended), vacuumed and analyzed once they had (the
    // queue indexes keep their pages, empty), then the next one.
    for (let burst = 0; burst < 3; burst++) {
      await insert(3000, 'enqueued', 'parts', true);
      await insert(3000, 'enqueued', 'plain', false);
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed', id = $1 || id WHERE status = 'enqueued'`, [`done${burst}-`]);
      await env.db.query('VACUUM ANALYZE weft.weft_workflows');
    }
    await insert(1000, 'enqueued', 'parts', true);
    await insert(1000, 'enqueued', 'plain', false);
    await insert(1, 'running', 'plain', false);
    plans = await capturePlans<Node>(env.db);
  });

  /** Every index of weft_workflows the plans of `run`'s statements read. */
  async function indexesOf(run: () => Promise<unknown>): Promise<string[]> {
    plans.length = 0;
    await run();
    expect(plans.length).toBeGreaterThan(0);
    return [...new Set(plans.flatMap(indexes))].sort();
  }

  const admit = (queue: string, partitioned: boolean) =>
    env.db.query(
      `SELECT * FROM weft.weft_queue_admit($1, 12, 50, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL, $2, $3, NULL, 0)`,
      [queue, partitioned, partitioned ? 2 : null],
    );

  it.each([true, false])('the admission (partitioned: %s) reads the queue indexes, not status_type_idx', async (partitioned) => {
    await env.db.query('BEGIN');
    try {
      const used = await indexesOf(() => admit(partitioned ? 'parts' : 'plain', partitioned));
      expect(used).not.toContain('weft_workflows_status_type_idx');
      expect(used).toContain(partitioned ? 'weft_workflows_partition_enqueued_idx' : 'weft_workflows_enqueued_idx');
    } finally {
      await env.db.query('ROLLBACK');
    }
  });

  it("an end commit's hand-off reads the queue indexes, not status_type_idx", async () => {
    await env.db.query('BEGIN');
    try {
      await env.db.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const used = await indexesOf(() => env.db.query(endsHandingOff(['running-plain-1'])));
      expect(used).not.toContain('weft_workflows_status_type_idx');
      expect(used).toContain('weft_workflows_enqueued_idx');
    } finally {
      await env.db.query('ROLLBACK');
    }
  });
});
