// Temporary probe: EXPLAIN (ANALYZE, BUFFERS) of a terminal commit's release, old vs new text, 3000 claims held.
import pg from 'pg';
import { WeftEngine } from '@weft/nest';
import { silent, withFreshDatabase } from './support.js';
import { advanceParams, advanceSql, shapeOf } from '../libs/weft/src/storage/repositories/workflow-advance.js';
const HELD = Number(process.argv[2] ?? 3000);
await withFreshDatabase(async (url) => {
  const e = await WeftEngine.create({ database: { url }, schema: 'weft', logger: silent, ownership: 'workflow-lease' });
  await e.bootstrap(); await e.dispose();
  const db = new pg.Client({ connectionString: url }); await db.connect();
  await db.query(`INSERT INTO weft.weft_workflows (id, type, status, input, version) SELECT 'w' || g, 'noop', CASE WHEN g <= ${HELD} THEN 'running' ELSE 'completed' END, 'null', 1 FROM generate_series(1, ${3 * HELD}) g`);
  await db.query(`INSERT INTO weft.weft_workflow_claims (workflow_id, epoch) SELECT 'w' || g, 1 FROM generate_series(1, ${3 * HELD}) g`);
  await db.query('ANALYZE weft.weft_workflows'); await db.query('ANALYZE weft.weft_workflow_claims');
  await db.query(`UPDATE weft.weft_workflow_claims SET engine_id = 'E', expires_at = now() + interval '1 hour' WHERE workflow_id IN (SELECT 'w' || g FROM generate_series(1, ${HELD}) g)`);
  const cmd = (id: string) => ({ workflowId: id, expectedVersion: 1, status: 'completed' as const, output: { value: 1 }, completed: true, fence: { engineId: 'E', epoch: '1' }, release: true });
  const newSql = advanceSql('weft', shapeOf(cmd('w1')));
  const oldSql = newSql.replace(/FROM ok JOIN claim_rows r ON r\.workflow_id = ok\.id\s+WHERE cl\.workflow_id = ANY\((.*?)\) AND ok\.release AND cl\.workflow_id = ok\.id\s+AND r\.engine_id = ok\.fence_engine AND r\.epoch = ok\.fence_epoch\)/s,
    (_m, ids) => `FROM ok WHERE cl.workflow_id = ANY(${ids}) AND ok.release AND cl.workflow_id = ok.id AND cl.engine_id = ok.fence_engine AND cl.epoch = ok.fence_epoch)`);
  if (oldSql === newSql) throw new Error('old text not rebuilt');
  for (const [name, sql] of [['old', oldSql], ['new', newSql]] as const) {
    await db.query('BEGIN'); await db.query('SET LOCAL plan_cache_mode = force_generic_plan');
    await db.query(`PREPARE p_${name} AS ${sql}`);
    const r = await db.query(`EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) EXECUTE p_${name}(${db.escapeLiteral(advanceParams([cmd('w7')])[0])})`);
    const lines = r.rows.map((x) => x['QUERY PLAN'] as string);
    const i = lines.findIndex((l) => l.includes('CTE rel'));
    console.log(`--- ${name}: ${lines.find((l) => l.startsWith('Execution Time'))}`);
    console.log(lines.slice(i, i + 30).filter((l) => /Index|Filter|Buffers|Removed|Heap/.test(l)).join('\n'));
    await db.query('ROLLBACK');
  }
  await db.end();
});
