import { qualify } from '../schema-name';

/** Which optional parts a batch of advances needs; each shape gets its own (prepared) statement. */
export interface AdvanceShape {
  ops: boolean;
  delTimers: boolean;
  timers: boolean;
  msgs: boolean;
  consume: boolean;
  fence: boolean;
}

export const shapeKey = (s: AdvanceShape) =>
  (s.ops ? 1 : 0) | (s.delTimers ? 2 : 0) | (s.timers ? 4 : 0) | (s.msgs ? 8 : 0) | (s.consume ? 16 : 0) | (s.fence ? 32 : 0);

/**
 * The checkpoint compare-and-swap: ONE statement whose data-modifying CTEs only write for the
 * workflows whose versioned UPDATE matched, so an advance costs one round trip and one
 * implicit transaction, a lost race writes nothing, and many workflows' advances can share the
 * statement (group commit). Parts a batch does not use are left out: planning and running the
 * full statement costs about twice the lean one. See docs/decisions/0001.
 */
export function advanceSql(schema: string, shape: AdvanceShape): string {
  const wf = qualify(schema, 'weft_workflows');
  const parts: string[] = [
    `cmd AS (
      SELECT * FROM json_to_recordset($1::json) AS c(
        id text, expected int, status text, set_output boolean, output json, set_error boolean, error json,
        completed boolean, ops json, clear_timers boolean, del_timers json, timers json, msgs json,
        consume json, fence_engine text, fence_epoch bigint))`,
  ];
  if (shape.fence) {
    parts.push(`fence AS (
      SELECT cl.workflow_id FROM ${qualify(schema, 'weft_workflow_claims')} cl JOIN cmd c ON cl.workflow_id = c.id
      WHERE c.fence_engine IS NOT NULL AND cl.engine_id = c.fence_engine AND cl.epoch = c.fence_epoch
      FOR SHARE OF cl)`);
  }
  parts.push(`upd AS (
      UPDATE ${wf} w SET
        status = COALESCE(c.status, w.status),
        output = CASE WHEN c.set_output THEN c.output ELSE w.output END,
        error = CASE WHEN c.set_error THEN c.error ELSE w.error END,
        completed_at = CASE WHEN c.completed THEN clock_timestamp() ELSE w.completed_at END,
        updated_at = clock_timestamp(),
        version = w.version + 1
      FROM cmd c
      WHERE w.id = c.id AND w.version = c.expected
        ${shape.fence ? 'AND (c.fence_engine IS NULL OR c.id IN (SELECT workflow_id FROM fence))' : ''}
      RETURNING w.id, w.version)`);
  parts.push(...extraParts(schema, shape));
  const fenced = shape.fence ? `(c.fence_engine IS NULL OR c.id IN (SELECT workflow_id FROM fence))` : 'true';
  return `WITH ${parts.join(',\n')}
    SELECT c.id, upd.version, ${fenced} AS fenced FROM cmd c LEFT JOIN upd ON upd.id = c.id`;
}

function extraParts(schema: string, shape: AdvanceShape): string[] {
  const ops = qualify(schema, 'weft_operations');
  const timers = qualify(schema, 'weft_timers');
  const msgs = qualify(schema, 'weft_messages');
  const out: string[] = [];
  if (shape.ops || shape.delTimers || shape.timers || shape.msgs || shape.consume) {
    out.push(`ok AS (SELECT c.* FROM cmd c JOIN upd ON upd.id = c.id)`);
  }
  if (shape.ops) {
    out.push(`ins_ops AS (
      INSERT INTO ${ops} (workflow_id, seq, kind, name, status, result, error, attempts, started_at)
      SELECT ok.id, o.seq, o.kind, o.name, o.status, o.result, o.error, COALESCE(o.attempts, 1), o.started_at
      FROM ok, json_to_recordset(ok.ops)
        AS o(seq int, kind text, name text, status text, result json, error json, attempts int, started_at timestamptz))`);
  }
  if (shape.delTimers) {
    out.push(`del_timers AS (
      DELETE FROM ${timers} t USING ok
      WHERE t.workflow_id = ok.id
        AND (ok.clear_timers OR (t.kind, t.seq) IN (
          SELECT d.kind, d.seq FROM json_to_recordset(ok.del_timers) AS d(kind text, seq int))))`);
  }
  if (shape.timers) {
    out.push(`ins_timers AS (
      INSERT INTO ${timers} (workflow_id, kind, seq, fire_at)
      SELECT ok.id, x.kind, x.seq, clock_timestamp() + x.delay_ms * interval '1 millisecond'
      FROM ok, json_to_recordset(ok.timers) AS x(kind text, seq int, delay_ms double precision)
      ON CONFLICT (workflow_id, kind, seq) DO NOTHING)`);
  }
  if (shape.msgs) {
    out.push(`ins_msgs AS (
      INSERT INTO ${msgs} (workflow_id, kind, name, payload)
      SELECT m.workflow_id, m.kind, m.name, m.payload
      FROM ok, json_to_recordset(ok.msgs) AS m(workflow_id text, kind text, name text, payload json)
      RETURNING workflow_id)`);
  }
  if (shape.consume) {
    out.push(`consume AS (
      UPDATE ${msgs} m SET consumed_seq = x.seq, status = COALESCE(x.status, 'consumed'), result = x.result
      FROM ok, json_to_recordset(ok.consume) AS x(id bigint, seq int, status text, result json)
      WHERE m.id = x.id AND m.workflow_id = ok.id)`);
  }
  return out;
}
