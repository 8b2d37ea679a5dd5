// The advance of ONE workflow that records at most one operation and uses no part beyond the
// fence and a release: a step's record and a plain terminal commit, three of the four commits of
// a short workflow at low load. The same compare-and-swap as advanceSql (workflow-advance.ts),
// with the command as plain parameters instead of a JSON record set: parsing and joining the
// record set were about a sixth of such a commit's round trip (docs/performance.md). Which parts
// it may write, its parameters and their values are the parts' `lone` (advance-parts.ts).
import { qualify } from '../schema-name.js';
import { loneParamsOf, type AdvanceShape } from './advance-shapes.js';

/**
 * The lone statement for `shape` (parts among ops, fence, release). Each part does what the
 * general statement's part of the same name does for a batch of one; hot-path-plans.spec.ts and
 * advance-lone.spec.ts hold the two to the same outcomes. `raising`: it fails when refused.
 */
export function loneAdvanceSql(schema: string, shape: AdvanceShape, raising = false): string {
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  const fields = loneParamsOf(shape);
  const p = (name: string) => {
    const i = fields.findIndex(([n]) => n === name);
    if (i < 0) throw new Error(`lone advance: no parameter ${name} in this shape`);
    return `$${i + 1}::${fields[i][1]}`;
  };
  const parts: string[] = [];
  if (shape.release) {
    // Locked before the workflow row, as the general statement and the claim handovers do.
    parts.push(`claim_rows AS (
      SELECT cl.workflow_id, cl.engine_id, cl.epoch FROM ${claims} cl
      WHERE cl.workflow_id = ${p('id')} FOR NO KEY UPDATE OF cl)`);
  }
  const conditions = [
    ...(shape.fence ? [`w.fence_epoch = ${p('fence_epoch')}`] : []),
    ...(shape.release ? ['(SELECT count(*) FROM claim_rows) >= 0'] : []),
  ];
  const holds = shape.release
    ? `EXISTS (SELECT 1 FROM claim_rows r WHERE r.engine_id = ${p('fence_engine')} AND r.epoch = ${p('fence_epoch')})`
    : '';
  // As fenceClearSql in workflow-advance.ts: the end of the run, or a release of the claim held, clears the fence.
  const clears = [...(shape.fence ? [p('completed')] : []), ...(shape.release ? [holds] : [])];
  const fenceClear = clears.length ? `\n        fence_epoch = CASE WHEN ${clears.join(' OR ')} THEN NULL ELSE w.fence_epoch END,` : '';
  parts.push(`upd AS (
      UPDATE ${wf} w SET
        status = COALESCE(${p('status')}, w.status),
        output = CASE WHEN ${p('set_output')} THEN ${p('output')} ELSE w.output END,
        error = CASE WHEN ${p('set_error')} THEN ${p('error')} ELSE w.error END,
        completed_at = CASE WHEN ${p('completed')} THEN clock_timestamp() ELSE w.completed_at END,
        updated_at = clock_timestamp(),${fenceClear}
        version = w.version + 1
      WHERE w.id = ${p('id')} AND w.version = ${p('expected')}${conditions.map((c) => ` AND ${c}`).join('')}
      RETURNING w.id, w.version)`);
  if (shape.ops) {
    parts.push(`ins_ops AS (
      INSERT INTO ${qualify(schema, 'weft_operations')} (workflow_id, seq, kind, name, status, result, error, attempts, started_at, event)
      SELECT upd.id, ${p('op_seq')}, ${p('op_kind')}, ${p('op_name')}, ${p('op_status')}, ${p('op_result')}, ${p('op_error')},
        COALESCE(${p('op_attempts')}, 1), ${p('op_started_at')}, ${p('op_event')}
      FROM upd)`);
  }
  if (shape.release) {
    parts.push(`rel AS (
      UPDATE ${claims} cl SET engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = cl.version + 1
      FROM upd, claim_rows r
      WHERE cl.workflow_id = ${p('id')} AND r.engine_id = ${p('fence_engine')} AND r.epoch = ${p('fence_epoch')})`);
  }
  // `raising` (a transactional step's commit, docs/decisions/0047): a refused command fails the
  // statement (division by zero), so that nothing behind it in its transaction commits; why it
  // was refused is read after the rollback (WorkflowRepository.advanceAndCommit).
  if (raising)
    return `WITH ${parts.join(',\n')}
    SELECT ${p('id')} AS id, upd.version, true AS fenced, true AS consumed, 1 / (upd.id IS NOT NULL)::int AS wrote
    FROM (SELECT 1) one LEFT JOIN upd ON true`;
  // As the general statement: a refused command says whether its fence had moved, read from the snapshot.
  const fenced = shape.fence
    ? `(upd.id IS NOT NULL OR COALESCE((SELECT x.fence_epoch FROM ${wf} x WHERE x.id = ${p('id')}) = ${p('fence_epoch')}, false))`
    : 'true';
  return `WITH ${parts.join(',\n')}
    SELECT ${p('id')} AS id, upd.version, ${fenced} AS fenced, true AS consumed
    FROM (SELECT 1) one LEFT JOIN upd ON true`;
}
