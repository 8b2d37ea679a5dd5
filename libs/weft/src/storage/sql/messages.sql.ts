import { NOTIFY_CHANNEL_PREFIX, qualify } from '../schema-name.js';

/** LISTEN/NOTIFY channel of one schema; the payload is the workflow id. Fits 63 bytes: see validateSchemaName. */
export const notifyChannel = (schema: string) => `${NOTIFY_CHANNEL_PREFIX}${schema}`;

/** SQL for weft_messages. Every insert notifies in the same statement (same transaction). */
export function messageSql(schema: string) {
  const msgs = qualify(schema, 'weft_messages');
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  const channel = notifyChannel(schema);
  return {
    /** Stores a signal or update request if the workflow is not finished; returns its status either way. */
    send: `
      WITH w AS (SELECT id, type, status FROM ${wf} WHERE id = $1),
      ins AS (
        INSERT INTO ${msgs} (workflow_id, kind, name, payload)
        SELECT w.id, $2, $3, $4::json FROM w WHERE w.status IN ('pending', 'running', 'suspended')
        RETURNING id, workflow_id),
      n AS (SELECT count(pg_notify('${channel}', ins.workflow_id)) AS n FROM ins)
      SELECT w.type, w.status, (SELECT id::text FROM ins) AS message_id, (SELECT n FROM n) AS notified FROM w`,
    /** Unconsumed, still pending messages of one workflow after an id, in arrival order. */
    inbox: `SELECT id::text AS id, kind, name, payload FROM ${msgs}
            WHERE workflow_id = $1 AND consumed_seq IS NULL AND status = 'pending' AND id > $2::bigint
            ORDER BY id`,
    /**
     * Owner-side poll, one query for all: workflows with buffered messages, held by this engine
     * ($1, ownership 'workflow-lease') or running with a type it registered ($1 null).
     */
    poll: `
      SELECT m.workflow_id, max(m.id)::text AS last_id FROM ${msgs} m
      JOIN ${wf} w ON w.id = m.workflow_id AND w.status = 'running' AND w.type = ANY($2::text[])
      WHERE m.consumed_seq IS NULL AND m.status = 'pending'
        AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM ${claims} c WHERE c.workflow_id = m.workflow_id AND c.engine_id = $1))
      GROUP BY m.workflow_id LIMIT $3`,
    readUpdate: `SELECT status, result FROM ${msgs} WHERE id = $1::bigint`,
    /** A caller that stops waiting withdraws its update unless it was applied meanwhile. */
    expireUpdate: `UPDATE ${msgs} SET status = 'expired' WHERE id = $1::bigint AND status = 'pending' AND consumed_seq IS NULL RETURNING id`,
    /** Insert a message with notify (a restarted run's start signal, in its transaction). */
    insert: `
      WITH ins AS (INSERT INTO ${msgs} (workflow_id, kind, name, payload) VALUES ($1, $2, $3, $4::json) RETURNING id, workflow_id)
      SELECT id::text AS id, (SELECT count(pg_notify('${channel}', workflow_id)) FROM ins) AS notified FROM ins`,
  };
}
