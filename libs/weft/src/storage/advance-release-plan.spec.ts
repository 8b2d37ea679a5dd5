// The release that rides on a terminal commit (`rel` in the advance statement) finds the claim
// row by its key. Its engine and epoch are judged on the row as locked (claim_rows), not by a
// predicate on the claims table's engine_id: with one, a generic plan (what every pooled
// connection runs after the 5th use) could walk weft_workflow_claims_engine_idx, i.e. every
// claim the committing engine holds, on every terminal commit (seen in EXPLAIN ANALYZE of the
// bench's commits). Plans are judged here, not times; plus the release still does its job.
import pg from 'pg';
import { useTestEngines } from '../../../../test/support/engine.js';
import { advanceParams, advanceSql } from './repositories/workflow-advance.js';
import { loneAdvanceSql } from './repositories/workflow-advance-lone.js';
import type { AdvanceCommand } from './types.js';
import { loneAdvanceParams, shapeKeyOf, shapeOf } from './repositories/advance-shapes.js';

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
      await db.query('SET plan_cache_mode = force_generic_plan');
      // Both texts of the advance: the general one for a command alone, and the lone one the engine
      // sends for a terminal commit with at most one operation (workflow-advance-lone.ts).
      const forms = {
        general: { sql: advanceSql('weft', shapeOf(terminal('w1', '1')), true), params: (c: AdvanceCommand) => advanceParams([c]) },
        lone: {
          sql: loneAdvanceSql('weft', shapeOf(terminal('w1', '1'))),
          params: (c: AdvanceCommand) => loneAdvanceParams(c, shapeKeyOf(c)),
        },
      };
      const claim = async (id: string) =>
        (await db.query('SELECT engine_id, epoch::text AS epoch FROM weft.weft_workflow_claims WHERE workflow_id = $1', [id])).rows[0];
      let released = 0;
      for (const [form, { sql, params }] of Object.entries(forms)) {
        const [w1, w2, w3] = form === 'general' ? ['w1', 'w2', 'w3'] : ['w4', 'w5', 'w6'];
        await db.query({ name: `terminal_${form}`, text: sql, values: params(terminal(w1, '1')) }); // prepares it
        await db.query(`PREPARE terminal_${form}_again AS ${sql}`);
        const literal = (p: unknown) => (p === null ? 'NULL' : db.escapeLiteral(String(p)));
        const [plan] = (
          await db.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
            `EXPLAIN (FORMAT JSON) EXECUTE terminal_${form}_again(${params(terminal(w2, '1')).map(literal).join(', ')})`,
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
        expect(await claim(w1)).toEqual({ engine_id: null, epoch: '1' });
        released++;
        const stale = await db.query({ name: `terminal_${form}`, text: sql, values: params(terminal(w3, '0')) });
        expect(stale.rows[0].fenced).toBe(false);
        expect(await claim(w3)).toEqual({ engine_id: ENGINE, epoch: '1' });
        const held = await db.query('SELECT count(*)::int AS n FROM weft.weft_workflow_claims WHERE engine_id = $1', [ENGINE]);
        expect(held.rows[0].n).toBe(HELD - released);
      }
    } finally {
      await db.end();
    }
  });
});
