import type { PoolClient } from 'pg';
import { WorkflowVersionConflictError } from '../common/errors.js';
import type { WorkflowStatus } from '../common/types.js';
import { SqlClient } from './sql-client.js';
import { advanceSql, AdvanceShape, shapeKey } from './sql/advance.sql.js';
import { operationSql } from './sql/operations.sql.js';
import { timerSql } from './sql/timers.sql.js';
import { workflowSql } from './sql/workflows.sql.js';
import type { AdvanceCommand, AdvanceOutcome, InboxMessage, TimerRow, WorkflowRow } from './types.js';
import type { OperationRecord } from '../common/types.js';
import { messageSql } from './sql/messages.sql.js';

const json = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

const timersJson = (w: InsertWorkflow) => w.timers.map((t) => ({ kind: t.kind, delay_ms: t.delayMs }));

const nonEmpty = <T, R>(items: T[] | undefined, map: (t: T) => R): R[] | null => (items?.length ? items.map(map) : null);

const opJson = (o: OperationRecord) => ({
  seq: o.seq,
  kind: o.kind,
  name: o.name,
  status: o.status,
  result: o.result ?? null,
  error: o.error ?? null,
  attempts: o.attempts ?? 1,
  started_at: o.startedAt ?? null,
  event: o.event ?? null,
});

function toCommandJson(c: AdvanceCommand) {
  return {
    id: c.workflowId,
    expected: c.expectedVersion,
    status: c.status ?? null,
    set_output: c.output !== undefined,
    output: c.output?.value ?? null,
    set_error: c.error !== undefined,
    error: c.error?.value ?? null,
    completed: c.completed === true,
    ops: nonEmpty(c.operations, opJson),
    clear_timers: c.clearTimers === true,
    del_timers: nonEmpty(c.deleteTimers, (t) => t),
    timers: nonEmpty(c.timers, (t) => ({ kind: t.kind, seq: t.seq, delay_ms: t.delayMs })),
    msgs: nonEmpty(c.messages, (m) => ({ workflow_id: m.workflowId, kind: m.kind, name: m.name, payload: m.payload ?? null })),
    consume: nonEmpty(c.consume, (m) => ({ ...m, result: m.result ?? null })),
    fence_engine: c.fence?.engineId ?? null,
    fence_epoch: c.fence?.epoch ?? null,
    lease_engine: c.leaseFence?.engineId ?? null,
    lease_epoch: c.leaseFence?.epoch ?? null,
    release: c.release === true,
    rotate: c.rotate === true,
  };
}

const shapeOf = (c: AdvanceCommand): AdvanceShape => ({
  ops: !!c.operations?.length,
  delTimers: !!c.clearTimers || !!c.deleteTimers?.length,
  timers: !!c.timers?.length,
  msgs: !!c.messages?.length,
  consume: !!c.consume?.length,
  fence: !!c.fence,
  lease: !!c.leaseFence,
  release: !!c.release && !!c.fence,
  rotate: !!c.rotate,
});

const unionShape = (a: AdvanceShape, b: AdvanceShape): AdvanceShape =>
  Object.fromEntries(Object.keys(a).map((k) => [k, a[k as keyof AdvanceShape] || b[k as keyof AdvanceShape]])) as unknown as AdvanceShape;

export function mapWorkflowRow(r: Record<string, unknown>): WorkflowRow {
  return {
    id: r.id as string,
    type: r.type as string,
    status: r.status as WorkflowStatus,
    input: r.input,
    output: r.output,
    error: r.error,
    parentId: (r.parent_id as string | null) ?? null,
    runNumber: r.run_number as number,
    deadline: (r.deadline as Date | null) ?? null,
    startAt: (r.start_at as Date | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
    completedAt: (r.completed_at as Date | null) ?? null,
    version: r.version as number,
  };
}

export interface InsertWorkflow {
  id: string;
  type: string;
  status: 'pending' | 'running';
  input: unknown;
  parentId: string | null;
  deadlineInMs: number | null;
  startInMs: number | null;
  timers: Array<{ kind: 'delayed-start' | 'execution-deadline'; delayMs: number }>;
  /** The claim written with the row: held by the inserting engine, a free row, or none. */
  claim?: 'mine' | 'free' | null;
  /** Signal-with-start: stored in the same statement as the row. */
  signal?: { name: string; payload: unknown } | null;
}

/** Who takes the claims of a start (ownership 'workflow-lease'). */
export interface Claimer {
  engineId: string;
  ttlMs: number;
  graceMs: number;
}

export interface InsertResult {
  inserted: boolean;
  status: WorkflowStatus;
  version: number;
  /** The epoch of the claim this engine took with the insert (claim 'mine'), else null. */
  claimEpoch: string | null;
  /** Id of the start signal stored with the insert, else null. */
  signalId: string | null;
}

export interface RestartResult {
  version: number;
  runNumber: number;
  claimEpoch: string | null;
  signalId: string | null;
}

export interface LoadedWorkflow {
  row: WorkflowRow;
  dbNow: Date;
  history: OperationRecord[];
  timers: Array<{ kind: string; seq: number; fireAt: Date }>;
  inbox: InboxMessage[];
}

/** Repository over the workflow tables. Every advance goes through `advance`. */
export class WorkflowStore {
  private readonly wf: ReturnType<typeof workflowSql>;
  private readonly ops: ReturnType<typeof operationSql>;
  private readonly tm: ReturnType<typeof timerSql>;
  private readonly advanceStatements = new Map<number, string>();
  readonly msg: ReturnType<typeof messageSql>;

  constructor(
    readonly sql: SqlClient,
    readonly schema: string,
  ) {
    this.wf = workflowSql(schema);
    this.ops = operationSql(schema);
    this.tm = timerSql(schema);
    this.msg = messageSql(schema);
  }

  /** Stores a signal or update request unless the workflow is finished; one statement with NOTIFY. */
  async send(workflowId: string, kind: 'signal' | 'update', name: string, payload: unknown) {
    const rows = await this.sql.query<{ type: string; status: WorkflowStatus; message_id: string | null }>(this.msg.send, [
      workflowId,
      kind,
      name,
      json(payload),
    ]);
    return rows[0] ? { type: rows[0].type, status: rows[0].status, messageId: rows[0].message_id } : null;
  }

  async inbox(workflowId: string, afterId: string): Promise<InboxMessage[]> {
    return this.sql.query<InboxMessage>(this.msg.inbox, [workflowId, afterId]);
  }

  async pollMessages(ownerEngineId: string | null, types: string[], limit: number) {
    return this.sql.query<{ workflow_id: string; last_id: string }>(this.msg.poll, [ownerEngineId, types, limit]);
  }

  async readUpdate(messageId: string): Promise<{ status: string; result: unknown } | null> {
    return (await this.sql.query<{ status: string; result: unknown }>(this.msg.readUpdate, [messageId]))[0] ?? null;
  }

  async expireUpdate(messageId: string): Promise<boolean> {
    return (await this.sql.query(this.msg.expireUpdate, [messageId])).length === 1;
  }

  async liveChildren(parentId: string): Promise<string[]> {
    return (await this.sql.query<{ id: string }>(this.wf.children, [parentId])).map((r) => r.id);
  }

  /** Applies many workflows' advances in one statement; each keeps its own version check. */
  async advanceMany(commands: AdvanceCommand[]): Promise<AdvanceOutcome[]> {
    if (commands.length === 0) return [];
    // In id order: the statement then locks claim and workflow rows in index order, the order
    // every other multi-row statement (renewal, release, reclaim) uses, so they cannot deadlock.
    const sorted = [...commands].sort((a, b) => (a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : 0));
    const rows = await this.sql.query<{ id: string; version: number | null; fenced: boolean; consumed: boolean }>(
      this.advanceSqlFor(sorted),
      [JSON.stringify(sorted.map(toCommandJson))],
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    return commands.map((c): AdvanceOutcome => {
      const r = byId.get(c.workflowId);
      if (r && r.version !== null) return { workflowId: c.workflowId, ok: true, version: r.version };
      const reason = r && !r.fenced ? 'fence' : r && r.consumed === false ? 'consume' : 'version';
      return { workflowId: c.workflowId, ok: false, reason };
    });
  }

  private advanceSqlFor(commands: AdvanceCommand[]): string {
    const shape = commands.map(shapeOf).reduce(unionShape);
    const key = shapeKey(shape);
    let sql = this.advanceStatements.get(key);
    if (!sql) {
      sql = advanceSql(this.schema, shape);
      this.advanceStatements.set(key, sql);
    }
    return sql;
  }

  /** One workflow's advance; throws WorkflowVersionConflictError when the version moved. */
  async advance(command: AdvanceCommand): Promise<number> {
    const [outcome] = await this.advanceMany([command]);
    if (!outcome.ok) throw new WorkflowVersionConflictError(command.workflowId, command.expectedVersion);
    return outcome.version;
  }

  /** Inserts the workflow if its id is free; otherwise returns the existing row's status. */
  async insert(w: InsertWorkflow, claimer?: Claimer): Promise<InsertResult> {
    return (await this.insertMany([w], claimer))[0];
  }

  /** Many starts in one statement (ids distinct); results in the order of `ws`. */
  async insertMany(ws: InsertWorkflow[], claimer?: Claimer): Promise<InsertResult[]> {
    type Row = {
      id: string;
      inserted: boolean;
      status: WorkflowStatus;
      version: number;
      claim_epoch: string | null;
      signal_id: string | null;
    };
    const rows = await this.sql.query<Row>(this.wf.insertMany, [
      JSON.stringify(
        ws.map((w) => ({
          id: w.id,
          type: w.type,
          status: w.status,
          input: w.input ?? null,
          parent_id: w.parentId,
          deadline_ms: w.deadlineInMs,
          start_ms: w.startInMs,
          timers: timersJson(w),
          claim: claimer ? (w.claim ?? null) : null,
          sig_name: w.signal?.name ?? null,
          sig_payload: w.signal ? (w.signal.payload ?? null) : null,
        })),
      ),
      claimer?.engineId ?? null,
      claimer?.ttlMs ?? null,
      claimer?.graceMs ?? null,
    ]);
    const byId = new Map<string, InsertResult>(
      rows.map((r) => [
        r.id,
        { inserted: r.inserted, status: r.status, version: r.version, claimEpoch: r.claim_epoch ?? null, signalId: r.signal_id ?? null },
      ]),
    );
    // An id a concurrent transaction inserted after our snapshot is missing: ask again (a new
    // statement sees it).
    const missing = ws.filter((w) => !byId.has(w.id));
    if (missing.length) (await this.insertMany(missing, claimer)).forEach((r, i) => byId.set(missing[i].id, r));
    return ws.map((w) => byId.get(w.id)!);
  }

  /**
   * Replaces a terminal run under the same id with a fresh one, history cleared, atomically;
   * its claim (claim 'mine' with a claimer) and start signal are written in the same transaction.
   */
  async restart(w: InsertWorkflow, expectedVersion: number, claimer?: Claimer): Promise<RestartResult | null> {
    return this.sql.transaction(async (client: PoolClient) => {
      const res = await client.query(this.wf.restart, [
        w.id,
        expectedVersion,
        w.type,
        w.status,
        json(w.input),
        w.parentId,
        w.deadlineInMs,
        w.startInMs,
      ]);
      if (res.rowCount !== 1) return null;
      for (const stmt of this.wf.clearHistory) await client.query(stmt, [w.id]);
      if (w.timers.length) await client.query(this.wf.insertTimers, [w.id, JSON.stringify(timersJson(w))]);
      let claimEpoch: string | null = null;
      if (claimer && w.claim === 'mine') {
        const c = await client.query(this.wf.restartClaim, [w.id, claimer.engineId, claimer.ttlMs, claimer.graceMs]);
        claimEpoch = (c.rows[0]?.epoch as string | undefined) ?? null;
      }
      let signalId: string | null = null;
      if (w.signal)
        signalId = (await client.query(this.msg.insert, [w.id, 'signal', w.signal.name, json(w.signal.payload ?? null)])).rows[0].id;
      return { version: res.rows[0].version as number, runNumber: res.rows[0].run_number as number, claimEpoch, signalId };
    });
  }

  async load(id: string): Promise<LoadedWorkflow | null> {
    const rows = await this.sql.query<Record<string, unknown>>(this.wf.load, [id]);
    if (!rows.length) return null;
    const r = rows[0];
    return {
      row: mapWorkflowRow(r),
      dbNow: r.db_now as Date,
      history: r.history as OperationRecord[],
      inbox: r.inbox as InboxMessage[],
      timers: (r.timers as Array<{ kind: string; seq: number; fire_at: string }>).map((t) => ({
        kind: t.kind,
        seq: t.seq,
        fireAt: new Date(t.fire_at),
      })),
    };
  }

  async get(id: string): Promise<WorkflowRow | null> {
    const rows = await this.sql.query(this.wf.get, [id]);
    return rows.length ? mapWorkflowRow(rows[0]) : null;
  }

  async history(id: string): Promise<OperationRecord[]> {
    const rows = await this.sql.query<Record<string, unknown>>(this.ops.history, [id]);
    return rows.map((r) => ({
      seq: r.seq as number,
      kind: r.kind as string,
      name: r.name as string,
      status: r.status as 'completed' | 'failed',
      result: r.result,
      error: r.error,
      attempts: r.attempts as number,
      startedAt: r.started_at ? (r.started_at as Date).toISOString() : null,
      event: (r.event as number | null) ?? null,
    }));
  }

  async list(filter: {
    statuses?: WorkflowStatus[];
    type?: string;
    after?: { at: string; id: string };
    limit: number;
  }): Promise<Array<WorkflowRow & { cursorAt: string }>> {
    const rows = await this.sql.query(this.wf.list, [
      filter.statuses?.length ? filter.statuses : null,
      filter.type ?? null,
      filter.after?.at ?? null,
      filter.after?.id ?? null,
      filter.limit,
    ]);
    return rows.map((r) => ({ ...mapWorkflowRow(r), cursorAt: r.cursor_at as string }));
  }

  async runningPage(afterId: string, limit: number): Promise<Array<{ id: string; type: string }>> {
    return this.sql.query(this.wf.runningIds, [afterId, limit]);
  }

  async takeDueTimers(limit: number, retryAfterMs: number, ownerEngineId: string | null, types: string[]): Promise<TimerRow[]> {
    const rows = await this.sql.query<Record<string, unknown>>(this.tm.takeDue, [limit, retryAfterMs, ownerEngineId, types]);
    return rows.map((r) => ({
      id: String(r.id),
      workflowId: r.workflow_id as string,
      kind: r.kind as TimerRow['kind'],
      seq: r.seq as number,
      fireAt: r.fire_at as Date,
    }));
  }
}
