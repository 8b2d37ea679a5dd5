// weft_messages: signals, update requests and child-completion notices, in arrival order.
// Consumption is part of the advance statement (workflow.repository.ts).
import { MessageEntity } from '../entities/message.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import type { PoolClient } from 'pg';
import type { WorkflowStatus } from '../../common/types.js';
import { NOTIFY_CHANNEL_PREFIX, qualify } from '../schema-name.js';
import { jsonParam, type Queryable } from '../sql-client.js';
import type { InboxMessage } from '../types.js';
import { workflowNow } from './timer.repository.js';
import { Payloads } from '../payloads.js';

/** LISTEN/NOTIFY channel of one schema; the payload is the workflow id. Fits 63 bytes: see validateSchemaName. */
export const notifyChannel = (schema: string) => `${NOTIFY_CHANNEL_PREFIX}${schema}`;

/**
 * The owner-side poll's text; `owned` adds the holder filter (pollOwned). The workflow is probed by
 * key: as a join on its status, a generic plan made after an ANALYZE that saw no running workflow
 * read every running workflow for each waiting message (docs/decisions/0056).
 */
const pollSql = (msgs: string, wf: string, owned: string) => `
      SELECT m.workflow_id, max(m.id)::text AS last_id, count(*)::int AS pending FROM ${msgs} m
      WHERE m.consumed_seq IS NULL AND m.status = 'pending'
        AND (SELECT w.status = 'running' AND w.type = ANY($1::text[]) FROM ${wf} w WHERE w.id = m.workflow_id) ${owned}
      GROUP BY m.workflow_id LIMIT $2`;

/** Every insert notifies in the same statement (same transaction). */
function statements(schema: string) {
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
        SELECT w.id, $2, $3, $4::json FROM w WHERE w.status IN ('pending', 'enqueued', 'running', 'suspended')
        RETURNING id, workflow_id),
      n AS (SELECT count(pg_notify('${channel}', ins.workflow_id)) AS n FROM ins)
      SELECT w.type, w.status, (SELECT id::text FROM ins) AS message_id, (SELECT n FROM n) AS notified FROM w`,
    /**
     * Unconsumed, still pending messages of one workflow, in id order, with the
     * workflow row's fence_epoch (the wake ownership check needs no read of its own).
     */
    inbox: `SELECT m.id::text AS id, m.kind, m.name, m.payload, w.fence_epoch::text AS fence_epoch
            FROM ${msgs} m JOIN ${wf} w ON w.id = m.workflow_id
            WHERE m.workflow_id = $1 AND m.consumed_seq IS NULL AND m.status = 'pending'
            ORDER BY m.id`,
    /**
     * Owner-side poll, one query for all: workflows with buffered messages, running with a type
     * this engine registered ($1) and, in pollOwned (ownership 'workflow-lease'), held by it ($3).
     * Two texts rather than a NULL owner meaning "any": see TimerRepository's takeDue.
     */
    poll: pollSql(msgs, wf, ''),
    pollOwned: pollSql(msgs, wf, `AND (SELECT c.engine_id FROM ${claims} c WHERE c.workflow_id = m.workflow_id) = $3`),
    readUpdate: `SELECT status, result FROM ${msgs} WHERE id = $1::bigint`,
    /** A child's end its parent has not taken yet, or took at a seq after $3 (the start's own). */
    noticeAfter: `SELECT EXISTS (SELECT 1 FROM ${msgs} WHERE workflow_id = $1 AND kind = 'child' AND name = $2
                    AND ((consumed_seq IS NULL AND status = 'pending') OR consumed_seq > $3::int)) AS found`,
    /** A caller that stops waiting withdraws its update unless it was applied meanwhile. */
    expireUpdate: `UPDATE ${msgs} SET status = 'expired' WHERE id = $1::bigint AND status = 'pending' AND consumed_seq IS NULL RETURNING id`,
    /**
     * A cancel request (docs/cancellation.md): for a running workflow never asked before, its
     * 'cancel' message and the timer that ends it once the grace period ($3 ms of workflow time,
     * offset $4) runs out, with NOTIFY, in one statement. Returns the status either way and
     * whether this call asked (a second request finds the first and adds nothing).
     */
    requestCancel: `
      WITH w AS (SELECT id, status FROM ${wf} WHERE id = $1),
      ins AS (
        INSERT INTO ${msgs} (workflow_id, kind, name, payload)
        SELECT w.id, 'cancel', 'cancel', $2::json FROM w WHERE w.status = 'running'
          AND NOT EXISTS (SELECT 1 FROM ${msgs} m WHERE m.workflow_id = w.id AND m.kind = 'cancel')
        RETURNING id, workflow_id),
      tim AS (
        INSERT INTO ${qualify(schema, 'weft_timers')} (workflow_id, kind, seq, fire_at)
        SELECT workflow_id, 'cancel-deadline', -1, ${workflowNow('$4')} + $3 * interval '1 millisecond' FROM ins
        ON CONFLICT (workflow_id, kind, seq) DO NOTHING RETURNING id),
      n AS (SELECT count(pg_notify('${channel}', ins.workflow_id)) AS n FROM ins)
      SELECT w.status, (SELECT id::text FROM ins) AS message_id, (SELECT count(*) FROM tim)::int AS timers,
        (SELECT n FROM n) AS notified FROM w`,
    /** A request its validator rejected: its caller read the refusal, and nothing of it stays. */
    dropRejected: `DELETE FROM ${msgs} WHERE id = $1::bigint AND status = 'rejected'`,
    /** Insert a message with notify (a restarted run's start signal, in its transaction). */
    insert: `
      WITH ins AS (INSERT INTO ${msgs} (workflow_id, kind, name, payload) VALUES ($1, $2, $3, $4::json) RETURNING id, workflow_id)
      SELECT id::text AS id, (SELECT count(pg_notify('${channel}', workflow_id)) FROM ins) AS notified FROM ins`,
  };
}

export class MessageRepository extends WeftRepository<MessageEntity> {
  private readonly q: ReturnType<typeof statements>;
  private readonly channel: string;

  constructor(
    db: SqlAccess,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, MessageEntity, 'weft_messages');
    this.q = statements(schema);
    this.channel = notifyChannel(schema);
  }

  /** Stores a signal or update request unless the workflow is finished; one statement with NOTIFY. */
  /** `via`: a caller's transaction (a transactional signal); its NOTIFY goes out when that commits. */
  async send(workflowId: string, kind: 'signal' | 'update', name: string, payload: unknown, via: Queryable = this.db) {
    const rows = await via.query<{ type: string; status: WorkflowStatus; message_id: string | null }>(this.q.send, [
      workflowId,
      kind,
      name,
      jsonParam(await this.payloads.encode(payload)),
    ]);
    return rows[0] ? { type: rows[0].type, status: rows[0].status, messageId: rows[0].message_id } : null;
  }

  /**
   * Asks a running workflow to cancel (the statement above); `via`: a caller's transaction. Null
   * when there is no such workflow; `asked` false when it is not running or was asked already.
   */
  async requestCancel(
    workflowId: string,
    reason: string,
    graceMs: number,
    clockOffsetMs: number,
    via: Queryable = this.db,
  ): Promise<{ status: WorkflowStatus; asked: boolean } | null> {
    const rows = await via.query<{ status: WorkflowStatus; message_id: string | null }>(this.q.requestCancel, [
      workflowId,
      jsonParam(await this.payloads.encode(reason)),
      graceMs,
      clockOffsetMs,
    ]);
    return rows[0] ? { status: rows[0].status, asked: rows[0].message_id !== null } : null;
  }

  /** `fenceEpoch` is undefined when there are no messages. */
  async inbox(workflowId: string): Promise<{ messages: InboxMessage[]; fenceEpoch?: string | null }> {
    const rows = await this.db.query<InboxMessage & { fence_epoch: string | null }>(this.q.inbox, [workflowId]);
    if (rows.length === 0) return { messages: [] };
    const messages = await this.payloads.inbox(rows.map(({ id, kind, name, payload }) => ({ id, kind, name, payload })));
    return { messages, fenceEpoch: rows[0].fence_epoch };
  }

  async poll(ownerEngineId: string | null, types: string[], limit: number) {
    type Row = { workflow_id: string; last_id: string; pending: number };
    if (ownerEngineId === null) return this.db.query<Row>(this.q.poll, [types, limit]);
    return this.db.query<Row>(this.q.pollOwned, [types, limit, ownerEngineId]);
  }

  /**
   * Did child `childId` end for the parent's start at `startSeq`? Its end's notice is still waiting
   * in the parent's messages, or the parent's run took it at a later seq (a run's spent messages
   * go with the run, so a notice taken is this run's). Null `startSeq`: only a waiting notice counts.
   */
  async hasNoticeAfter(parentId: string, childId: string, startSeq: number | null): Promise<boolean> {
    const [r] = await this.db.query<{ found: boolean }>(this.q.noticeAfter, [parentId, childId, startSeq]);
    return r.found;
  }

  async readUpdate(messageId: string): Promise<{ status: string; result: unknown } | null> {
    const r = (await this.db.query<{ status: string; result: unknown }>(this.q.readUpdate, [messageId]))[0];
    return r ? { status: r.status, result: await this.payloads.decode(r.result) } : null;
  }

  async expireUpdate(messageId: string): Promise<boolean> {
    return (await this.db.query(this.q.expireUpdate, [messageId])).length === 1;
  }

  async dropRejected(messageId: string): Promise<void> {
    await this.db.query(this.q.dropRejected, [messageId]);
  }

  /** Subscribes `client` (held open for it) to this schema's message notifications. */
  async listen(client: PoolClient): Promise<void> {
    await client.query(`LISTEN "${this.channel}"`);
  }

  async unlisten(client: PoolClient): Promise<void> {
    await client.query('UNLISTEN *');
  }

  /** A signal inside another repository's transaction (a restarted run's start signal); returns its id. */
  async insertSignal(client: PoolClient, workflowId: string, name: string, payload: unknown): Promise<string> {
    return (await client.query(this.q.insert, [workflowId, 'signal', name, jsonParam(await this.payloads.encode(payload ?? null))])).rows[0]
      .id as string;
  }
}
