// The parts of the advance statement, each described once: the columns it adds to the `cmd`
// record set, whether a command uses it, what a command writes into its record, the workflow-row
// columns it sets in the versioned UPDATE, the rows it writes after it, and, for the parts the
// lone form writes, its parameters there. The shape key, the record a command is sent as, the lone
// form's parameters and the statement cache's key all derive from this list (advance-shapes.ts);
// the statement's frame (record set, locks, the UPDATE, refusals) is in workflow-advance.ts, the
// lone form in workflow-advance-lone.ts, the hand-off's CTEs in advance-handoff.ts
// (docs/architecture.md, "Adding a ctx operation").
import type { OperationRecord } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import { jsonOrNullParam } from '../sql-client.js';
import type { AdvanceCommand } from '../types.js';
import { notifyChannel } from './message.repository.js';
import { entryNoticeSql, eventNoticeSql, talkNoticeSql } from '../talk-notice.js';
import { handoffWrites } from './advance-handoff.js';

type Json = Record<string, unknown>;

/** A part's parameters in the lone form: names and types, in order, and a command's values. */
export interface LoneParams {
  readonly params: ReadonlyArray<readonly [string, string]>;
  values(c: AdvanceCommand): unknown[];
  /** Whether the command's use of the part fits the lone form (absent: always). */
  fits?(c: AdvanceCommand): boolean;
}

export interface AdvancePart {
  /** Its columns of the `cmd` record set (`name type, ...`). */
  readonly columns: string;
  /**
   * 'always': every text declares the columns (the parts the statement began with); 'used': only
   * a shape with the part does, so texts without it stay as they were before it was added.
   */
  readonly declared: 'always' | 'used';
  /** Whether a command uses the part: its bit in the command's shape key. */
  uses(c: AdvanceCommand): boolean;
  /** Writes what the command has of the part into its record; an absent key reads as NULL. */
  toJson(c: AdvanceCommand, out: Json): void;
  /**
   * Its CTEs in the general statement that write for the commands whose versioned UPDATE matched
   * (they join `ok`); the locks and conditions it adds before and to that UPDATE are in advanceSql.
   */
  writes?(q: PartSql): string[];
  /**
   * The columns of the workflow row it sets in the versioned UPDATE (`\n        col = expr,` each),
   * for this shape. Asked of every part, used or not: a part may keep its column right when
   * another part changes the run (a continue-as-new clears the attributes). Absent or '': none.
   */
  sets?(shape: Readonly<Record<string, boolean>>): string;
  /**
   * Columns it adds to the statement's final SELECT (`, expr AS name`): a CTE that only SELECTs
   * (a pg_notify) runs only when something reads it. Absent: none.
   */
  readonly returns?: string;
  /** Absent: a shape with the part takes the general statement. */
  readonly lone?: LoneParams;
}

/** What a part's SQL is built for. */
export interface PartSql {
  schema: string;
  /** The shape has the `cont` part: a continuing command's own rows are not written. */
  continues: boolean;
  /** The filter on the batch's ids every join repeats (`= $2::text` for a batch of one). */
  ids: string;
}

/**
 * A consumed update's row holds the result its caller polls for (engine.update reads it every
 * 200 ms at most), so continue-as-new keeps such rows this long instead of deleting them at once.
 */
const UPDATE_RESULT_KEEP = "interval '10 minutes'";

/** A continuing command's own operations and timers belong to the run that ends: not written. */
const notContinuing = (continues: boolean) => (continues ? '\n      WHERE ok.cont IS NOT TRUE' : '');

/** What every command has: its id, expected version and the columns of its row it sets. */
export const BASE_PART = {
  columns: 'id text, expected int, status text, set_output boolean, output json, set_error boolean, error json, completed boolean',
  toJson(c: AdvanceCommand, out: Json): void {
    out.id = c.workflowId;
    out.expected = c.expectedVersion;
    if (c.status !== undefined) out.status = c.status;
    if (c.output !== undefined) Object.assign(out, { set_output: true, output: c.output.value ?? null });
    if (c.error !== undefined) Object.assign(out, { set_error: true, error: c.error.value ?? null });
    if (c.completed) out.completed = true;
  },
  lone: {
    params: [
      ['id', 'text'],
      ['expected', 'int'],
      ['status', 'text'],
      ['set_output', 'boolean'],
      ['output', 'json'],
      ['set_error', 'boolean'],
      ['error', 'json'],
      ['completed', 'boolean'],
    ],
    // A NULL flag is "not asked for", as in the record set.
    values: (c: AdvanceCommand): unknown[] => [
      c.workflowId,
      c.expectedVersion,
      c.status ?? null,
      c.output !== undefined ? true : null,
      c.output !== undefined ? jsonOrNullParam(c.output.value) : null,
      c.error !== undefined ? true : null,
      c.error !== undefined ? jsonOrNullParam(c.error.value) : null,
      c.completed ? true : null,
    ],
  },
} as const;

const opJson = (o: OperationRecord) => {
  // Absent keys read as NULL in json_to_recordset: only what the operation has is sent.
  const out: Json = { seq: o.seq, kind: o.kind, name: o.name, status: o.status };
  if (o.result !== undefined && o.result !== null) out.result = o.result;
  if (o.error !== undefined && o.error !== null) out.error = o.error;
  if (o.attempts !== undefined && o.attempts !== 1) out.attempts = o.attempts;
  if (o.startedAt) out.started_at = o.startedAt;
  if (o.event !== undefined && o.event !== null) out.event = o.event;
  return out;
};

function opParams(o: OperationRecord | undefined): unknown[] {
  if (!o) throw new Error('lone advance: a shape with ops needs the operation');
  return [
    o.seq,
    o.kind,
    o.name,
    o.status,
    jsonOrNullParam(o.result),
    jsonOrNullParam(o.error),
    o.attempts ?? null,
    o.startedAt ?? null,
    o.event ?? null,
  ];
}

/** The parts, in the order of their bits in a shape key (append new ones: keys stay stable). */
export const ADVANCE_PARTS = {
  ops: {
    columns: 'ops json',
    declared: 'always',
    uses: (c) => !!c.operations?.length,
    toJson: (c, out) => {
      if (c.operations?.length) out.ops = c.operations.map(opJson);
    },
    writes: ({ schema, continues }) => [
      `ins_ops AS (
      INSERT INTO ${qualify(schema, 'weft_operations')} (workflow_id, seq, kind, name, status, result, error, attempts, started_at, event)
      SELECT ok.id, o.seq, o.kind, o.name, o.status, o.result, o.error, COALESCE(o.attempts, 1), o.started_at, o.event
      FROM ok, json_to_recordset(ok.ops)
        AS o(seq int, kind text, name text, status text, result json, error json, attempts int, started_at timestamptz, event int)${notContinuing(continues)})`,
    ],
    lone: {
      params: [
        ['op_seq', 'int'],
        ['op_kind', 'text'],
        ['op_name', 'text'],
        ['op_status', 'text'],
        ['op_result', 'json'],
        ['op_error', 'json'],
        ['op_attempts', 'int'],
        ['op_started_at', 'timestamptz'],
        ['op_event', 'int'],
      ],
      values: (c) => opParams(c.operations?.[0]),
      fits: (c) => (c.operations?.length ?? 0) <= 1,
    },
  },
  delTimers: {
    columns: 'clear_timers boolean, del_timers json',
    declared: 'always',
    uses: (c) => !!c.clearTimers || !!c.deleteTimers?.length,
    toJson: (c, out) => {
      if (c.clearTimers) out.clear_timers = true;
      if (c.deleteTimers?.length) out.del_timers = c.deleteTimers;
    },
    writes: ({ schema, ids }) => [
      `del_timers AS (
      DELETE FROM ${qualify(schema, 'weft_timers')} t USING ok
      WHERE t.workflow_id ${ids} AND t.workflow_id = ok.id
        AND (ok.clear_timers OR (t.kind, t.seq) IN (
          SELECT d.kind, d.seq FROM json_to_recordset(ok.del_timers) AS d(kind text, seq int))))`,
    ],
  },
  timers: {
    columns: 'timers json',
    declared: 'always',
    uses: (c) => !!c.timers?.length,
    toJson: (c, out) => {
      if (c.timers?.length) out.timers = c.timers.map((t) => ({ kind: t.kind, seq: t.seq, delay_ms: t.delayMs }));
    },
    writes: ({ schema, continues }) => [
      `ins_timers AS (
      INSERT INTO ${qualify(schema, 'weft_timers')} (workflow_id, kind, seq, fire_at)
      SELECT ok.id, x.kind, x.seq, clock_timestamp() + x.delay_ms * interval '1 millisecond'
      FROM ok, json_to_recordset(ok.timers) AS x(kind text, seq int, delay_ms double precision)${notContinuing(continues)}
      ON CONFLICT (workflow_id, kind, seq) DO NOTHING)`,
    ],
  },
  msgs: {
    columns: 'msgs json',
    declared: 'always',
    uses: (c) => !!c.messages?.length,
    toJson: (c, out) => {
      if (c.messages?.length)
        out.msgs = c.messages.map((m) => ({ workflow_id: m.workflowId, kind: m.kind, name: m.name, payload: m.payload ?? null }));
    },
    writes: ({ schema }) => [
      `ins_msgs AS (
      INSERT INTO ${qualify(schema, 'weft_messages')} (workflow_id, kind, name, payload)
      SELECT m.workflow_id, m.kind, m.name, m.payload
      FROM ok, json_to_recordset(ok.msgs) AS m(workflow_id text, kind text, name text, payload json)
      RETURNING workflow_id)`,
      // NOTIFY in the same transaction as the insert: the owner wakes as soon as it commits.
      `notified AS (SELECT count(pg_notify('${notifyChannel(schema)}', workflow_id)) AS n FROM ins_msgs)`,
    ],
    returns: ', (SELECT n FROM notified) AS notified',
  },
  consume: {
    columns: 'consume json',
    declared: 'always',
    uses: (c) => !!c.consume?.length,
    toJson: (c, out) => {
      if (c.consume?.length) out.consume = c.consume.map((m) => ({ ...m, result: m.result ?? null }));
    },
    // Its messages are locked (`locked`) and checked before the UPDATE, in advanceSql.
    writes: ({ schema, ids }) => [
      `consume AS (
      UPDATE ${qualify(schema, 'weft_messages')} m SET consumed_seq = x.seq, status = COALESCE(x.status, 'consumed'), result = x.result
      FROM ok, json_to_recordset(ok.consume) AS x(id bigint, seq int, status text, result json)
      WHERE m.workflow_id ${ids} AND m.consumed_seq IS NULL AND m.id = x.id AND m.workflow_id = ok.id)`,
    ],
  },
  fence: {
    columns: 'fence_engine text, fence_epoch bigint',
    declared: 'always',
    uses: (c) => !!c.fence,
    toJson: (c, out) => {
      if (c.fence) Object.assign(out, { fence_engine: c.fence.engineId, fence_epoch: c.fence.epoch });
    },
    lone: { params: [['fence_epoch', 'bigint']], values: (c) => [c.fence?.epoch ?? null] },
  },
  lease: {
    columns: 'lease_engine text, lease_epoch bigint',
    declared: 'always',
    uses: (c) => !!c.leaseFence,
    toJson: (c, out) => {
      if (c.leaseFence) Object.assign(out, { lease_engine: c.leaseFence.engineId, lease_epoch: c.leaseFence.epoch });
    },
  },
  release: {
    columns: 'release boolean',
    declared: 'always',
    // A release is judged against the fence: an unfenced command never releases.
    uses: (c) => !!c.release && !!c.fence,
    toJson: (c, out) => {
      if (c.release) out.release = true;
    },
    // Holder and epoch are judged on the row as locked (claim_rows, FOR NO KEY UPDATE, so it
    // cannot change before we commit), and the claims table is only searched by its key: a
    // predicate on cl.engine_id let a generic plan walk the engine index, i.e. every claim this
    // engine holds, on every terminal commit (advance-release-plan.spec.ts).
    writes: ({ schema, ids }) => [
      `rel AS (
      UPDATE ${qualify(schema, 'weft_workflow_claims')} cl SET engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = cl.version + 1
      FROM ok JOIN claim_rows r ON r.workflow_id = ok.id
      WHERE cl.workflow_id ${ids} AND ok.release AND cl.workflow_id = ok.id
        AND r.engine_id = ok.fence_engine AND r.epoch = ok.fence_epoch)`,
    ],
    // Only a release names the engine: the claim row's holder must be the fence's.
    lone: { params: [['fence_engine', 'text']], values: (c) => [c.fence?.engineId ?? null] },
  },
  rotate: {
    columns: 'rotate boolean',
    declared: 'always',
    uses: (c) => !!c.rotate,
    toJson: (c, out) => {
      if (c.rotate) out.rotate = true;
    },
    writes: ({ schema, ids }) => [
      `rot AS (
      UPDATE ${qualify(schema, 'weft_workflow_claims')} cl SET epoch = cl.epoch + 1, engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = cl.version + 1
      FROM ok WHERE cl.workflow_id ${ids} AND ok.rotate AND cl.workflow_id = ok.id)`,
    ],
  },
  cont: {
    columns: 'cont boolean, next_input json, next_version text',
    declared: 'always',
    uses: (c) => c.continueAsNew !== undefined,
    toJson: (c, out) => {
      if (c.continueAsNew !== undefined)
        Object.assign(out, {
          cont: true,
          next_input: c.continueAsNew.input ?? null,
          next_version: c.continueAsNew.workflowVersion ?? null,
        });
    },
    /*
     * Continue-as-new, in the same statement as the versioned UPDATE: the ended run's history and
     * its per-operation timers go (the execution deadline, seq -1, spans the chain and stays), and
     * so do messages it is done with (consumed or withdrawn, and child notices: the next run starts
     * no child of this run's). A signal that arrives meanwhile is pending and stays for the next
     * run. The data-modifying CTEs share one snapshot, so nothing this statement inserts is deleted.
     */
    sets: (shape) =>
      shape.cont
        ? `
        input = CASE WHEN c.cont THEN c.next_input ELSE w.input END,
        run_number = w.run_number + CASE WHEN c.cont THEN 1 ELSE 0 END,
        workflow_version = CASE WHEN c.cont THEN c.next_version ELSE w.workflow_version END,`
        : '',
    writes: ({ schema, ids }) => [
      `cont_ops AS (
      DELETE FROM ${qualify(schema, 'weft_operations')} o USING ok
      WHERE o.workflow_id ${ids} AND o.workflow_id = ok.id AND ok.cont)`,
      `cont_timers AS (
      DELETE FROM ${qualify(schema, 'weft_timers')} t USING ok
      WHERE t.workflow_id ${ids} AND t.workflow_id = ok.id AND ok.cont AND t.seq >= 0)`,
      `cont_msgs AS (
      DELETE FROM ${qualify(schema, 'weft_messages')} m USING ok
      WHERE m.workflow_id ${ids} AND m.workflow_id = ok.id AND ok.cont AND (m.kind = 'child' OR ((m.consumed_seq IS NOT NULL OR m.status <> 'pending')
          AND (m.kind <> 'update' OR m.created_at < clock_timestamp() - ${UPDATE_RESULT_KEEP}))))`,
    ],
  },
  /** Stores the run's workflow span (tracing on: a span's first commit). */
  trace: {
    columns: 'trace_context text',
    declared: 'used',
    uses: (c) => c.traceContext !== undefined,
    toJson: (c, out) => {
      if (c.traceContext !== undefined) out.trace_context = c.traceContext;
    },
    // Only a shape that stores one names the column, so with tracing off the statements stay as they were.
    sets: (shape) => (shape.trace ? '\n        trace_context = COALESCE(c.trace_context, w.trace_context),' : ''),
  },
  /** An external transition, judged on the row's status instead of its version (`ifStatus`). */
  byStatus: {
    columns: 'if_status text',
    declared: 'used',
    uses: (c) => c.ifStatus !== undefined,
    toJson: (c, out) => {
      if (c.ifStatus !== undefined) out.if_status = c.ifStatus;
    },
  },
  /**
   * ctx.setAttributes: merged into the row's attributes (a null value removes its key, and the
   * column holds no nulls); a continue-as-new clears them, as the next run starts with none. Only
   * a shape that sets or may clear them names the column, so the other statements stay as they were.
   */
  attrs: {
    columns: 'attributes jsonb',
    declared: 'used',
    uses: (c) => c.attributes !== undefined,
    toJson: (c, out) => {
      if (c.attributes !== undefined) out.attributes = c.attributes;
    },
    sets: (shape) => {
      if (!shape.attrs && !shape.cont) return '';
      const merged = shape.attrs
        ? "CASE WHEN c.attributes IS NULL THEN w.attributes ELSE jsonb_strip_nulls(COALESCE(w.attributes, '{}'::jsonb) || c.attributes) END"
        : 'w.attributes';
      return `
        attributes = ${shape.cont ? `CASE WHEN c.cont THEN NULL ELSE ${merged} END` : merged},`;
    },
  },
  /**
   * ctx.setEvent: each key's value upserted into weft_events (the last of a key in one commit wins),
   * and a NOTIFY in the same statement that wakes getEvent's waiters on every engine once it commits
   * and carries the stored value when short, so they need no read (storage/talk-notice.ts). Written by a continuing command too: events belong to the workflow id
   * and outlive its runs. Only a shape that sets one names the column.
   */
  events: {
    columns: 'events json',
    declared: 'used',
    uses: (c) => !!c.events?.length,
    toJson: (c, out) => {
      if (c.events?.length) out.events = [...new Map(c.events.map((e) => [e.key, e])).values()];
    },
    writes: ({ schema }) => [
      `ins_events AS (
      INSERT INTO ${qualify(schema, 'weft_events')} AS e (workflow_id, key, value, seq, updated_at)
      SELECT ok.id, x.key, x.value, x.seq, clock_timestamp()
      FROM ok, json_to_recordset(ok.events) AS x(key text, value json, seq int)
      ON CONFLICT (workflow_id, key) DO UPDATE SET value = EXCLUDED.value, seq = EXCLUDED.seq, updated_at = EXCLUDED.updated_at
      RETURNING e.workflow_id, e.key, e.value)`,
      `events_notified AS (SELECT count(pg_notify('${notifyChannel(schema)}', ${eventNoticeSql('workflow_id', 'key', 'value')})) AS n FROM ins_events)`,
    ],
    returns: ', (SELECT n FROM events_notified) AS events_notified',
  },
  /**
   * ctx.writeStream / ctx.closeStream from workflow code (exactly once: only with the commit that
   * records the call). The stream's counter row is upserted first (ON CONFLICT DO UPDATE works on its
   * latest version, so a step body's concurrent append cannot take the same offsets), then the
   * entries take the offsets it handed out, in call order; a NOTIFY per stream wakes its readers
   * (carrying the entry when the commit appended one to that stream).
   * A stream an earlier run of the chain closed stays closed: its entries here are not stored.
   */
  streams: {
    columns: 'streams json',
    declared: 'used',
    uses: (c) => !!c.streams?.length,
    toJson: (c, out) => {
      if (c.streams?.length) out.streams = c.streams.map((w, n) => ({ key: w.key, value: w.value ?? null, close: w.close === true, n }));
    },
    writes: ({ schema }) => {
      const rows = 'FROM ok, json_to_recordset(ok.streams) AS x(key text, value json, close boolean, n int)';
      return [
        `st_heads AS (
      INSERT INTO ${qualify(schema, 'weft_streams')} AS s (workflow_id, key, next_offset, closed)
      SELECT ok.id, x.key, count(*) FILTER (WHERE NOT x.close), bool_or(x.close)
      ${rows}
      GROUP BY ok.id, x.key
      ON CONFLICT (workflow_id, key) DO UPDATE SET next_offset = s.next_offset + EXCLUDED.next_offset, closed = s.closed OR EXCLUDED.closed
        WHERE NOT s.closed
      RETURNING s.workflow_id, s.key, s.next_offset)`,
        `st_entries AS (
      INSERT INTO ${qualify(schema, 'weft_stream_entries')} (workflow_id, key, "offset", value, at)
      SELECT e.id, e.key, h.next_offset - e.cnt + e.i, e.value, clock_timestamp()
      FROM (SELECT ok.id, x.key, x.value, row_number() OVER w - 1 AS i, count(*) OVER w AS cnt
            ${rows} WHERE NOT x.close WINDOW w AS (PARTITION BY ok.id, x.key ORDER BY x.n
              ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)) e
      JOIN st_heads h ON h.workflow_id = e.id AND h.key = e.key
      RETURNING workflow_id, key, "offset", value, at)`,
        // Per stream; a stream's one entry of this commit rides in its notice (storage/talk-notice.ts).
        `st_notified AS (SELECT count(pg_notify('${notifyChannel(schema)}',
        CASE WHEN x.n = 1 THEN ${entryNoticeSql('x.workflow_id', 'x.key', 'x.o', 'NULL::int', 'x.at', 'x.value')}
          ELSE ${talkNoticeSql('x.workflow_id', 'x.key')} END)) AS n
      FROM (SELECT h.workflow_id, h.key, count(e."offset") AS n, min(e."offset") AS o, min(e.at) AS at, min(e.value::text) AS value
            FROM st_heads h LEFT JOIN st_entries e ON e.workflow_id = h.workflow_id AND e.key = h.key
            GROUP BY h.workflow_id, h.key) x)`,
      ];
    },
    returns: ', (SELECT n FROM st_notified) AS st_notified',
  },
  /**
   * ctx.signalWorkflow: stored with the commit that records the call, so exactly once, and only for
   * a target that still takes signals (as engine.signal's); a NOTIFY wakes its owner. Sent by a
   * continuing command too: the call happened.
   */
  sends: {
    columns: 'sends json',
    declared: 'used',
    uses: (c) => !!c.sends?.length,
    toJson: (c, out) => {
      if (c.sends?.length) out.sends = c.sends.map((m) => ({ workflow_id: m.workflowId, name: m.name, payload: m.payload ?? null }));
    },
    writes: ({ schema }) => [
      `ins_sends AS (
      INSERT INTO ${qualify(schema, 'weft_messages')} (workflow_id, kind, name, payload)
      SELECT t.id, 'signal', m.name, m.payload
      FROM ok, json_to_recordset(ok.sends) AS m(workflow_id text, name text, payload json)
      JOIN ${qualify(schema, 'weft_workflows')} t ON t.id = m.workflow_id AND t.status IN ('pending', 'enqueued', 'running', 'suspended')
      RETURNING workflow_id)`,
      `sends_notified AS (SELECT count(pg_notify('${notifyChannel(schema)}', workflow_id)) AS n FROM ins_sends)`,
    ],
    returns: ', (SELECT n FROM sends_notified) AS sends_notified',
  },
  /**
   * An async update handler finished (docs/messages.md): its request row, consumed as `accepted`
   * when the handler began, gets its outcome for the caller. Only an accepted row changes, so a
   * replay that finishes the handler again writes nothing.
   */
  updateResults: {
    columns: 'update_results json',
    declared: 'used',
    uses: (c) => !!c.updateResults?.length,
    toJson: (c, out) => {
      if (c.updateResults?.length)
        out.update_results = c.updateResults.map((u) => ({ id: u.id, status: u.status, result: u.result ?? null }));
    },
    writes: ({ schema, ids }) => [
      `upd_results AS (
      UPDATE ${qualify(schema, 'weft_messages')} m SET status = x.status, result = x.result
      FROM ok, json_to_recordset(ok.update_results) AS x(id bigint, status text, result json)
      WHERE m.workflow_id ${ids} AND m.workflow_id = ok.id AND m.id = x.id AND m.status = 'accepted')`,
    ],
  },
  /**
   * A queued run's end hands its slot to the queue's next enqueued workflow in the same statement
   * (docs/decisions/0042): the ending row stops counting and the picked one starts counting in one
   * commit, so every admission's count (taken under the queue's lock, from any snapshot) sees the
   * same number of running rows either way; the picked rows are locked SKIP LOCKED, as admission's.
   * One pick per ending command of the queue (when `pick`), from its highest priority (FIFO), of the
   * types the engine runs, claimed for it (ownership 'workflow-lease'); returned with the command's
   * row, with whether work is left. An end that asked for a pick and still freed its slot while work
   * is left NOTIFYs the other engines (once per queue and statement: PostgreSQL folds equal
   * notifications of a transaction).
   */
  handoff: {
    columns:
      'handoff_queue text, handoff_pick boolean, handoff_types varchar[], handoff_engine text, handoff_ttl float8, handoff_grace float8, handoff_notifier text',
    declared: 'used',
    uses: (c) => c.handoff !== undefined,
    toJson: (c, out) => {
      const h = c.handoff;
      if (h)
        Object.assign(out, {
          handoff_queue: h.queue,
          handoff_pick: h.pick,
          handoff_types: h.types,
          handoff_engine: h.engineId,
          handoff_ttl: h.ttlMs,
          handoff_grace: h.graceMs,
          handoff_notifier: h.notifier,
        });
    },
    writes: ({ schema }) => handoffWrites(schema),
    returns: `, (SELECT o.ho_json FROM ho_out o WHERE o.from_id = c.id) AS handoff,
      (SELECT l.more FROM ho_left l JOIN ho_from f ON f.q = l.q WHERE f.id = c.id) AS handoff_more, (SELECT n FROM ho_notified) AS ho_notified`,
  },
} satisfies Record<string, AdvancePart>;
