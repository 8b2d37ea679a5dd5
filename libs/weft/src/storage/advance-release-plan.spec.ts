// The release that rides on a terminal commit (`rel` in the advance statement) finds the claim
// row by its key. Its engine and epoch are judged on the row as locked (claim_rows), not by a
// predicate on the claims table's engine_id: with one, a generic plan (what every pooled
// connection runs after the 5th use) could walk weft_workflow_claims_engine_idx, i.e. every
// claim the committing engine holds, on every terminal commit (seen in EXPLAIN ANALYZE of the
// bench's commits). Plans are judged here, not times; plus the release still does its job.
import pg from 'pg';
import { useTestEngines } from '../../../../test/support/engine.js';
import { advanceParams, advanceSql, shapeOf } from './repositories/workflow-advance.js';
import type { AdvanceCommand } from './types.js';

const ENGINE = 'engine-a';
const HELD = 3000;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Subplan Name'?: string;
  Plans?: PlanNode[];
}

/** The nodes under the `rel` CTE (the release), however deep. */
function releaseNodes(root: PlanNode): PlanNode[] {
  const out: PlanNode[] = [];
  const walk = (n: PlanNode, inRel: boolean) => {
    const here = inRel || n['Subplan Name'] === 'CTE rel';
    if (here) out.push(n);
    for (const c of n.Plans ?? []) walk(c, here);
  };
  walk(root, false);
  return out;
}

describe('advance statement: the release finds the claim by its key (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('uses the primary key, not the engine index, in the generic plan, and releases exactly the fenced claim', async () => {
    // An engine bootstraps the schema; the rows are written by hand.
    const engine = await env.pool.create({ ownership: 'workflow-lease' });
    await engine.bootstrap();
    await engine.dispose();
    const db = new pg.Client({ connectionString: env.tdb.url });
    await db.connect();
    try {
      // Statistics taken while most claims were released (engine_id NULL: ended workflows) make
      // `engine_id = $x` look nearly unique; then HELD running workflows get claimed by
      // engine-a (a busy engine, or one with many parked workflows) before the next ANALYZE.
      // The running ones held at epoch 1 (fence_epoch, as the claim handover writes it).
      await db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version, fence_epoch)
                      SELECT 'w' || g, 'noop', CASE WHEN g <= ${HELD} THEN 'running' ELSE 'completed' END, 'null', 1,
                             CASE WHEN g <= ${HELD} THEN 1 END
                      FROM generate_series(1, ${3 * HELD}) g`);
      await db.query(
        `INSERT INTO weft.weft_workflow_claims (workflow_id, epoch) SELECT 'w' || g, 1 FROM generate_series(1, ${3 * HELD}) g`,
      );
      await db.query('ANALYZE weft.weft_workflows');
      await db.query('ANALYZE weft.weft_workflow_claims');
      await db.query(
        `UPDATE weft.weft_workflow_claims SET engine_id = $1, expires_at = now() + interval '1 hour', claimed_at = now()
         WHERE workflow_id IN (SELECT 'w' || g FROM generate_series(1, ${HELD}) g)`,
        [ENGINE],
      );

      const terminal = (id: string, epoch: string): AdvanceCommand => ({
        workflowId: id,
        expectedVersion: 1,
        status: 'completed',
        output: { value: 1 },
        completed: true,
        fence: { engineId: ENGINE, epoch },
        release: true,
      });
      const sql = advanceSql('weft', shapeOf(terminal('w1', '1')), true); // one command: its id is $2
      await db.query('SET plan_cache_mode = force_generic_plan');
      await db.query({ name: 'terminal', text: sql, values: advanceParams([terminal('w1', '1')]) }); // prepares it
      await db.query('PREPARE terminal_again AS ' + sql);
      const [plan] = (
        await db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
          `EXPLAIN (FORMAT JSON) EXECUTE terminal_again(${advanceParams([terminal('w2', '1')])
            .map((p) => db.escapeLiteral(p))
            .join(', ')})`,
        )
      ).rows[0]['QUERY PLAN'];
      const rel = releaseNodes(plan.Plan);
      expect(rel.length).toBeGreaterThan(0);
      const indexes = rel.map((n) => n['Index Name']).filter(Boolean);
      expect(indexes).not.toContain('weft_workflow_claims_engine_idx');
      expect(rel.some((n) => n['Relation Name'] === 'weft_workflow_claims' && n['Node Type'] === 'Seq Scan')).toBe(false);
      expect(indexes).toContain('weft_workflow_claims_pkey');

      // And it still releases exactly what it should: w1 (fenced at epoch 1) now free, w3 at a
      // stale epoch refused and still held, nobody else touched.
      const claim = async (id: string) =>
        (await db.query('SELECT engine_id, epoch::text AS epoch FROM weft.weft_workflow_claims WHERE workflow_id = $1', [id])).rows[0];
      expect(await claim('w1')).toEqual({ engine_id: null, epoch: '1' });
      const stale = await db.query({ name: 'terminal', text: sql, values: advanceParams([terminal('w3', '0')]) });
      expect(stale.rows[0].fenced).toBe(false);
      expect(await claim('w3')).toEqual({ engine_id: ENGINE, epoch: '1' });
      const held = await db.query('SELECT count(*)::int AS n FROM weft.weft_workflow_claims WHERE engine_id = $1', [ENGINE]);
      expect(held.rows[0].n).toBe(HELD - 1);
    } finally {
      await db.end();
    }
  });
});
