// weft_workflows, the aggregate root: starts (with their timers, claim and signal in the same
// statement), restarts, reads, and the versioned advance that every workflow write goes through.
import { WorkflowEntity } from '../entities/workflow.entity.js';
import { WeftRepository } from './weft-repository.js';
import type { PoolClient } from 'pg';
import { WorkflowVersionConflictError } from '../../common/errors.js';
import type { ClockOffset } from '../../common/clock.js';
import type { OperationRecord, WorkflowAttributes, WorkflowStatus } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import type { AppTransaction } from '../app-transaction.js';
import { jsonOrNullParam, jsonParam, type Queryable, type SqlClient } from '../sql-client.js';
import type { AdvanceCommand, AdvanceOutcome, InboxMessage, InsertWorkflow, WorkflowRow } from '../types.js';
import { claimFreeSql, type ClaimTerms } from './claim.repository.js';
import type { MessageRepository } from './message.repository.js';
import { AdvanceStatements } from './advance-statements.js';
import { advanceOutcomes, AdvanceRow } from './workflow-advance.js';
import { isLoneStart, LoneStarts } from './workflow-start-lone.js';
import { singletonStartParams, singletonStartSql } from './workflow-start-singleton.js';
import { LIVE, purgeStatements } from './workflow-purge.js';
import { listStatement, type ListQuery } from './workflow-list.js';
import { partitionsFrom, queuePartitionsSql, type PartitionFigures, type PartitionRow } from './workflow-partitions.js';
import { type ForkOrigin, type RetryOrigin, WorkflowRepair } from './workflow-repair.js';
import { Payloads } from '../payloads.js';
import { decodeStepProgress, stepProgressFrom, stepProgressOfRun, type StepProgressRow } from './step-progress.repository.js';

// Delays count from the database clock; `off`, the workflow clock's offset (common/clock.ts), puts
// the times they make on the workflow clock.
const timersJson = (w: InsertWorkflow, off: number) => w.timers.map((t) => ({ kind: t.kind, delay_ms: t.delayMs + off }));
const plus = (ms: number | null, off: number) => (ms === null ? null : ms + off);

function statements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  const ops = qualify(schema, 'weft_operations');
  const timers = qualify(schema, 'weft_timers');
  const msgs = qualify(schema, 'weft_messages');
  const claims = qualify(schema, 'weft_workflow_claims');
  return {
    /**
     * Start, of one or many workflows in one statement (group commit of starts): insert each id
     * if absent, in id order so concurrent batches cannot deadlock on each other's keys. Ids that
     * already existed come back with inserted = false; an id inserted by a transaction that
     * committed after this statement's snapshot comes back not at all (the caller asks again).
     *
     * The same statement writes what makes the run able to go (docs/decisions/0005: the acquire
     * is folded into the enabling write): its claim (`claim` = 'mine': held by $2 for $3 ms; 'free': a
     * row with no holder for other engines' reclaim scans) and a signal-with-start's signal, so
     * nothing can commit between the insert and the claim (a cancel) and a crash cannot leave
     * one without the other. A claim row an earlier run of the id left is taken only if free
     * (claimFreeSql: no holder, expired past the grace $4, or not the fence of a running workflow).
     */
    startMany: `
      WITH req AS (
        SELECT * FROM json_to_recordset($1::json) AS r(
          id text, type text, status text, input json, parent_id text, deadline_ms double precision,
          start_ms double precision, timers json, claim text, sig_name text, sig_payload json, trace_context text,
          workflow_version text, queue text, priority integer, partition_key text, attributes jsonb, headers json)
      ),
      ins AS (
        INSERT INTO ${wf} (id, type, status, input, parent_id, deadline, start_at, version, trace_context, workflow_version, queue, priority,
                           partition_key, fence_epoch, attributes, headers)
        SELECT id, type, status, input, parent_id,
               CASE WHEN deadline_ms IS NULL THEN NULL ELSE clock_timestamp() + deadline_ms * interval '1 millisecond' END,
               CASE WHEN start_ms IS NULL THEN NULL ELSE clock_timestamp() + start_ms * interval '1 millisecond' END,
               1, trace_context, workflow_version, queue, COALESCE(priority, 0), partition_key,
               -- the epoch ins_claims gives a 'mine' claim: 1, or one past a row an earlier run of the id left
               CASE WHEN claim = 'mine' THEN COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = req.id), 0) + 1 END,
               attributes, headers
        FROM req ORDER BY id
        ON CONFLICT (id) DO NOTHING
        RETURNING id, status, version, fence_epoch
      ),
      ins_timers AS (
        INSERT INTO ${timers} (workflow_id, kind, seq, fire_at)
        SELECT ins.id, x.kind, -1, clock_timestamp() + x.delay_ms * interval '1 millisecond'
        FROM ins JOIN req ON req.id = ins.id, json_to_recordset(req.timers) AS x(kind text, delay_ms double precision)
      ),
      ins_claims AS (
        INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
        SELECT ins.id, CASE WHEN req.claim = 'mine' THEN 1 ELSE 0 END,
               CASE WHEN req.claim = 'mine' THEN $2::text END,
               CASE WHEN req.claim = 'mine' THEN clock_timestamp() + $3::double precision * interval '1 millisecond' END,
               CASE WHEN req.claim = 'mine' THEN clock_timestamp() END
        FROM ins JOIN req ON req.id = ins.id WHERE req.claim IS NOT NULL ORDER BY ins.id
        ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
          expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
        WHERE EXCLUDED.engine_id IS NOT NULL AND ${claimFreeSql(schema, 'cl', '$4::double precision')}
        RETURNING workflow_id, epoch::text AS epoch, engine_id
      ),
      ins_sig AS (
        INSERT INTO ${msgs} (workflow_id, kind, name, payload)
        SELECT ins.id, 'signal', req.sig_name, req.sig_payload FROM ins JOIN req ON req.id = ins.id
        WHERE req.sig_name IS NOT NULL
        RETURNING workflow_id, id::text AS id
      )
      SELECT ins.id, ins.status, ins.version, true AS inserted,
             -- A claim whose epoch is not the row's fence_epoch (a claim row changed since the snapshot) is not adopted.
             (SELECT ic.epoch FROM ins_claims ic WHERE ic.workflow_id = ins.id AND ic.engine_id = $2::text
                AND ic.epoch = ins.fence_epoch::text) AS claim_epoch,
             (SELECT s.id FROM ins_sig s WHERE s.workflow_id = ins.id) AS signal_id
      FROM ins
      UNION ALL
      -- Ids that were there already: one probe by key each (OFFSET 0 keeps the planner from
      -- turning it into a join, which a generic plan made on a small table did by scanning it).
      SELECT w.id, w.status, w.version, false, NULL, NULL
      FROM req CROSS JOIN LATERAL (SELECT x.id, x.status, x.version FROM ${wf} x WHERE x.id = req.id OFFSET 0) w
      WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.id = req.id)`,

    /** The row's fence epoch, to tell why a transactional step's advance was refused. */
    fenceEpoch: `SELECT fence_epoch::text AS epoch FROM ${wf} WHERE id = $1`,

    /**
     * After a transactional step's advance, in its transaction, right before its COMMIT: fails
     * (division by zero) unless that advance wrote the step's record, i.e. its versioned UPDATE
     * matched. A refused advance then makes PostgreSQL turn the COMMIT sent behind it into a
     * ROLLBACK, so the body's writes never commit without their record (both go in one round trip).
     * "Written by this transaction" is "visible and still in progress": a record committed by
     * another owner reads as committed. The row's xmin may be a subtransaction's (a body that rolled
     * back to a savepoint goes on inside it), so it is not compared with the top-level id; its
     * epoch is taken as the current one. Were that wrong (ids wrapping around within the
     * transaction), the check fails and the attempt rolls back and runs again: never the reverse.
     */
    wroteOperation: `SELECT 1 / count(*)::int AS wrote FROM ${ops} o
      WHERE o.workflow_id = $1 AND o.seq = $2
        AND pg_xact_status((((pg_current_xact_id()::text::bigint >> 32) << 32) + o.xmin::text::bigint)::text::xid8) = 'in progress'`,

    /** Live (non-terminal) children, for the parent-close policy. */
    statuses: `SELECT id, status FROM ${wf} WHERE id = ANY($1::varchar[])`,
    ...purgeStatements(wf),
    children: `SELECT id FROM ${wf} WHERE parent_id = $1 AND status IN (${LIVE})
                 AND ($2::varchar[] IS NULL OR id = ANY($2::varchar[]))`,
    /** Restart a terminal workflow under the same id (idPolicy 'start-new-if-terminal'). */
    restart: `
      UPDATE ${wf} SET type = $3, status = $4, input = $5::json, output = NULL, error = NULL, parent_id = $6,
        deadline = CASE WHEN $7::double precision IS NULL THEN NULL ELSE clock_timestamp() + $7 * interval '1 millisecond' END,
        start_at = CASE WHEN $8::double precision IS NULL THEN NULL ELSE clock_timestamp() + $8 * interval '1 millisecond' END,
        run_number = run_number + 1, created_at = clock_timestamp(), updated_at = clock_timestamp(),
        completed_at = NULL, version = version + 1, trace_context = $9, workflow_version = $10,
        queue = $11, priority = $12, partition_key = $13, admitted_at = NULL, attributes = $14::jsonb, headers = $15::json
      WHERE id = $1 AND version = $2 AND status IN ('completed','failed','cancelled','timed_out')
      RETURNING id, status, version, run_number`,
    clearHistory: [
      `DELETE FROM ${ops} WHERE workflow_id = $1`,
      `DELETE FROM ${msgs} WHERE workflow_id = $1`,
      `DELETE FROM ${timers} WHERE workflow_id = $1`,
    ],
    /** Restart's claim, in the same transaction as the restart (see startMany). */
    restartClaim: `
      WITH c AS (
        INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
        VALUES ($1, 1, $2, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp())
        ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
          expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
        WHERE ${claimFreeSql(schema, 'cl', '$4::double precision')}
        RETURNING workflow_id, epoch
      ),
      fenced AS (UPDATE ${wf} w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id)
      SELECT epoch::text AS epoch FROM c`,
    insertTimers: `
      INSERT INTO ${timers} (workflow_id, kind, seq, fire_at)
      SELECT $1, x.kind, -1, clock_timestamp() + x.delay_ms * interval '1 millisecond'
      FROM json_to_recordset($2::json) AS x(kind text, delay_ms double precision)`,

    /** Everything a replay needs, in one round trip. */
    load: `SELECT w.id, w.type, w.status, w.input, w.output, w.error, w.parent_id, w.run_number, w.deadline,
                  w.start_at, w.created_at, w.updated_at, w.completed_at, w.version, clock_timestamp() AS db_now, w.trace_context,
                  w.fence_epoch::text AS fence_epoch, w.attributes, w.queue, w.slot_released_at IS NOT NULL AS slot_released,
                  w.singleton_key IS NOT NULL AS singleton, w.headers,
                  COALESCE((SELECT json_agg(json_build_object('seq', o.seq, 'kind', o.kind, 'name', o.name,
                      'status', o.status, 'result', o.result, 'error', o.error, 'attempts', o.attempts, 'event', o.event)
                      ORDER BY o.seq)
                    FROM ${ops} o WHERE o.workflow_id = w.id), '[]'::json) AS history,
                  COALESCE((SELECT json_agg(json_build_object('id', m.id::text, 'kind', m.kind, 'name', m.name,
                      'payload', m.payload) ORDER BY m.id)
                    FROM ${msgs} m WHERE m.workflow_id = w.id AND m.consumed_seq IS NULL AND m.status = 'pending'),
                    '[]'::json) AS inbox,
                  COALESCE((SELECT json_agg(json_build_object('kind', t.kind, 'seq', t.seq, 'fire_at', t.fire_at))
                    FROM ${timers} t WHERE t.workflow_id = w.id), '[]'::json) AS timers,
                  ${stepProgressOfRun(schema, 'w')} AS progress
           FROM ${wf} w WHERE w.id = ANY($1::text[])`,
    get: `SELECT id, type, status, input, output, error, parent_id, run_number, deadline, start_at,
                 created_at, updated_at, completed_at, version, workflow_version, queue, priority, admitted_at, attributes,
                 forked_from, retried_from
          FROM ${wf} WHERE id = $1`,
    /**
     * The testing kit's autoSkip: live workflows, and those of them that wait on nothing stored
     * that time would end (no timer, no live child), a few of their ids.
     */
    untimed: `SELECT count(*)::int AS live,
                     (array_agg(w.id ORDER BY w.id) FILTER (WHERE NOT EXISTS (SELECT 1 FROM ${timers} t WHERE t.workflow_id = w.id)
                        AND NOT EXISTS (SELECT 1 FROM ${wf} c WHERE c.parent_id = w.id AND c.status IN (${LIVE}))))[1:20] AS untimed
              FROM ${wf} w WHERE w.status IN (${LIVE})`,
    runningIds: `SELECT id, type FROM ${wf} WHERE status = 'running' AND type = ANY($3::varchar[]) AND id > $1 ORDER BY id LIMIT $2`,
  };
}

function loadedFrom(r: Record<string, unknown>, off: number): LoadedWorkflow {
  return {
    row: mapWorkflowRow(r),
    dbNow: new Date((r.db_now as Date).getTime() + off), // workflow time, as the timers' fire_at

    traceContext: (r.trace_context as string | null) ?? null,
    headers: (r.headers as Record<string, string> | null) ?? null,
    fenceEpoch: (r.fence_epoch as string | null) ?? null,
    slotReleased: r.slot_released === true,
    singleton: r.singleton === true,
    history: r.history as OperationRecord[],
    inbox: r.inbox as InboxMessage[],
    progress: stepProgressFrom(r.progress),
    timers: (r.timers as Array<{ kind: string; seq: number; fire_at: string }>).map((t) => ({
      kind: t.kind,
      seq: t.seq,
      fireAt: new Date(t.fire_at),
    })),
  };
}

export function mapWorkflowRow(r: Record<string, unknown>): WorkflowRow {
  const row: WorkflowRow = {
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
    workflowVersion: (r.workflow_version as string | null | undefined) ?? null,
    queue: (r.queue as string | null | undefined) ?? null,
    priority: (r.priority as number | undefined) ?? 0,
    admittedAt: (r.admitted_at as Date | null | undefined) ?? null,
  };
  if (r.attributes !== undefined) row.attributes = (r.attributes as WorkflowAttributes | null) ?? {}; // `get` reads it
  if (r.forked_from !== undefined) row.forkedFrom = (r.forked_from as ForkOrigin | null) ?? null;
  if (r.retried_from !== undefined) row.retriedFrom = (r.retried_from as RetryOrigin | null) ?? null;
  return row;
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

/** A row of a start statement (startMany, or the lone start). */
interface StartRow {
  id: string;
  inserted: boolean;
  status: WorkflowStatus;
  version: number;
  claim_epoch: string | null;
  signal_id: string | null;
}

export interface RestartResult {
  version: number;
  runNumber: number;
  claimEpoch: string | null;
  signalId: string | null;
}

export interface LoadedWorkflow {
  row: WorkflowRow;
  /** The database clock when loaded, on the workflow clock (common/clock.ts). */
  dbNow: Date;
  history: OperationRecord[];
  timers: Array<{ kind: string; seq: number; fireAt: Date }>;
  inbox: InboxMessage[];
  /** W3C traceparent of the run's latest traced span, or of its starter (observability/tracing.ts). */
  traceContext: string | null;
  /** The epoch the row's fenced writes must carry; null while its claim has no holder (docs/decisions/0008). */
  fenceEpoch: string | null;
  /** What its start's interceptors stored (docs/interceptors.md), decoded; null when none. */
  headers: Record<string, string> | null;
  /** Its running steps' heartbeats and first starts, as an earlier owner saved them (docs/long-steps.md). */
  progress: StepProgressRow[];
  /** Parked with its queue slot given back (releaseWhileWaiting): it takes one again before it goes on. */
  slotReleased: boolean;
  /** It holds a singleton key. */
  singleton: boolean;
}

/** The division by zero of a refused raising advance (workflow-advance-lone.ts), not a lost connection. */
const isRefusal = (err: unknown): boolean => (err as { code?: unknown } | undefined)?.code === '22012';

/**
 * weft_workflows. Injectable from WeftModule for reading workflows (`get`, `list`); every write
 * is the engine's, through `advanceMany` (a versioned compare-and-swap).
 */
export class WorkflowRepository extends WeftRepository<WorkflowEntity> {
  private readonly wf: ReturnType<typeof statements>;
  private readonly advanceStatements: AdvanceStatements;
  private readonly loneStarts: LoneStarts;
  private readonly singletonSql: string;
  private readonly partitionsSql: string;
  /** @internal engine.fork and engine.retry. */
  readonly repair: WorkflowRepair;

  /** @internal Built by the engine; inject it from WeftModule. */
  constructor(
    private readonly client: SqlClient,
    private readonly schema: string,
    private readonly messages: MessageRepository,
    private readonly clockOffset: ClockOffset = () => 0,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(client, WorkflowEntity, 'weft_workflows');
    this.wf = statements(schema);
    this.advanceStatements = new AdvanceStatements(schema, clockOffset);
    this.loneStarts = new LoneStarts(schema);
    this.singletonSql = singletonStartSql(schema);
    this.partitionsSql = queuePartitionsSql(schema);
    this.repair = new WorkflowRepair(client, schema, payloads);
  }

  /** @internal The status of each id that exists. */
  async statuses(ids: string[]): Promise<Map<string, WorkflowStatus>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.query<{ id: string; status: WorkflowStatus }>(this.wf.statuses, [ids]);
    return new Map(rows.map((r) => [r.id, r.status]));
  }

  /**
   * @internal On `via`, a transaction's connection: deletes at most `limit` ended workflows past their
   * retention (with their histories) and returns how many, or null when another engine's pass holds the lock.
   */
  async purgeBatch(via: Queryable, rules: Array<{ status: WorkflowStatus; keepMs: number }>, limit: number): Promise<number | null> {
    const [lock] = await via.query<{ ok: boolean }>(this.wf.retentionLock, [`weft:retention:${this.schema}`]);
    if (!lock.ok) return null;
    const rows = await via.query(this.wf.purgeBatch, [rules.map((r) => r.status), rules.map((r) => r.keepMs), limit]);
    return rows.length;
  }

  /**
   * @internal Deletes one ended workflow with its history and its descendants (how many went, in
   * all), or says why it may not.
   */
  async purgeOne(
    id: string,
  ): Promise<{ purged: number } | 'missing' | { refused: 'live' | 'live-children' | 'live-parent'; status: WorkflowStatus }> {
    type Row = { live: boolean; live_children: boolean; live_parent: boolean; deleted: number; purged: boolean; status: WorkflowStatus };
    const [r] = await this.db.query<Row>(this.wf.purgeOne, [id]);
    if (!r) return 'missing';
    if (r.purged) return { purged: r.deleted };
    return { refused: r.live ? 'live' : r.live_children ? 'live-children' : 'live-parent', status: r.status };
  }

  /** @internal The parent's live children; only those `among` when given (one run's children). */
  async liveChildren(parentId: string, among?: string[]): Promise<string[]> {
    return (await this.db.query<{ id: string }>(this.wf.children, [parentId, among ?? null])).map((r) => r.id);
  }

  /** @internal Applies many workflows' advances in one statement; each keeps its own version check. */
  async advanceMany(given: AdvanceCommand[]): Promise<AdvanceOutcome[]> {
    if (given.length === 0) return [];
    const commands = await this.payloads.commands(given);
    // In id order: the statement then locks claim and workflow rows in index order, the order
    // every other multi-row statement (renewal, release, reclaim) uses, so they cannot deadlock.
    const sorted = [...commands].sort((a, b) => (a.workflowId < b.workflowId ? -1 : a.workflowId > b.workflowId ? 1 : 0));
    const { sql, params } = this.advanceStatements.for(sorted);
    return advanceOutcomes(commands, await this.db.query<AdvanceRow>(sql, params));
  }

  /**
   * @internal One advance on `via`, a transaction's connection (a transactional step's commit):
   * the same statement as advanceMany's, so the same version check and fence, judged when it runs
   * inside that transaction, right before its COMMIT.
   */
  async advanceOn(via: Queryable, given: AdvanceCommand): Promise<AdvanceOutcome> {
    const command = await this.payloads.command(given);
    const { sql, params } = this.advanceStatements.for([command]);
    return advanceOutcomes([command], await via.query<AdvanceRow>(sql, params))[0];
  }

  /**
   * @internal A transactional step's commit: its advance (the lone form that fails when refused,
   * else as advanceOn's and the check that it wrote the step's record `seq`), and COMMIT, in one
   * round trip on `tx`'s connection (docs/decisions/0047). Committed iff
   * the outcome is ok. Throws what the advance threw (the transaction rolled back), and what
   * `commitAfter` throws (a serialization failure, or CommitOutcomeUnknown).
   */
  async advanceAndCommit(tx: AppTransaction, given: AdvanceCommand, seq: number): Promise<AdvanceOutcome> {
    const command = this.payloads.active ? await this.payloads.command(given) : given;
    const advance = this.advanceStatements.forStep(command, seq);
    // The lone form that fails when refused is its own check (docs/decisions/0047).
    const check = { sql: this.wf.wroteOperation, params: [command.workflowId, seq] };
    const { committed, results } = await tx.commitAfter(advance.raises ? [advance] : [advance, check]);
    const [advanced, wrote] = results;
    if ('error' in advanced) {
      if (advance.raises && isRefusal(advanced.error)) return this.refusal(command);
      throw advanced.error;
    }
    const outcome = advanceOutcomes([command], advanced.rows as unknown as AdvanceRow[])[0];
    if (outcome.ok && !committed) throw wrote && 'error' in wrote ? wrote.error : new Error(`The record of step ${seq} did not commit`);
    return outcome;
  }

  /**
   * Why a raising advance was refused, read after its transaction rolled back: the fence, when
   * the row's epoch is no longer the command's (it never comes back: epochs only grow, and the end
   * of a run clears it), else the version, as the statement's own snapshot would have said.
   */
  private async refusal(command: AdvanceCommand): Promise<AdvanceOutcome> {
    const refused = (reason: 'version' | 'fence'): AdvanceOutcome => ({ workflowId: command.workflowId, ok: false, reason });
    if (!command.fence) return refused('version');
    const [row] = await this.db.query<{ epoch: string | null }>(this.wf.fenceEpoch, [command.workflowId]);
    return refused(row?.epoch === command.fence.epoch ? 'version' : 'fence');
  }

  /** @internal One workflow's advance; throws WorkflowVersionConflictError when the version moved. */
  async advance(command: AdvanceCommand): Promise<number> {
    const [outcome] = await this.advanceMany([command]);
    if (!outcome.ok) throw new WorkflowVersionConflictError(command.workflowId, command.expectedVersion);
    return outcome.version;
  }

  /** @internal Inserts the workflow if its id is free; otherwise returns the existing row's status. */
  async start(w: InsertWorkflow, claimer?: ClaimTerms): Promise<InsertResult> {
    return (await this.startMany([w], claimer))[0];
  }

  /** @internal Many starts in one statement (ids distinct); results in the order of `ws`. `via`: a caller's transaction. */
  async startMany(ws: InsertWorkflow[], claimer?: ClaimTerms, via: Queryable = this.db): Promise<InsertResult[]> {
    return this.insertEncoded(await this.payloads.starts(ws), claimer, via);
  }

  /** startMany's statement, for starts whose payloads are encoded already (it asks again for some). */
  private async insertEncoded(ws: InsertWorkflow[], claimer: ClaimTerms | undefined, via: Queryable): Promise<InsertResult[]> {
    // One start without timers or a signal goes as the lone start (workflow-start-lone.ts).
    const lone = isLoneStart(ws) ? this.loneStarts.for(ws[0], claimer) : undefined;
    const off = this.clockOffset();
    const rows = lone
      ? await via.query<StartRow>(lone.sql, lone.params)
      : await via.query<StartRow>(this.wf.startMany, [
          JSON.stringify(
            ws.map((w) => ({
              id: w.id,
              type: w.type,
              status: w.status,
              input: w.input ?? null,
              parent_id: w.parentId,
              deadline_ms: plus(w.deadlineInMs, off),
              start_ms: plus(w.startInMs, off),
              timers: timersJson(w, off),
              claim: claimer ? (w.claim ?? null) : null,
              sig_name: w.signal?.name ?? null,
              sig_payload: w.signal ? (w.signal.payload ?? null) : null,
              trace_context: w.traceContext, // absent from the JSON when undefined (tracing off)
              workflow_version: w.workflowVersion ?? null,
              queue: w.queue, // absent from the JSON outside a queue, like trace_context
              priority: w.priority,
              partition_key: w.partitionKey, // absent outside a partitioned queue
              attributes: w.attributes, // absent from the JSON when none
              headers: w.headers ?? undefined, // absent when none
            })),
          ),
          // Unused without a claimer, but never NULL: NULLs folded into custom plans made them look
          // cheaper than the generic plan, so every start was planned afresh (plan-cache.spec.ts).
          claimer?.engineId ?? '',
          claimer?.ttlMs ?? 0,
          claimer?.graceMs ?? 0,
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
    if (missing.length) (await this.insertEncoded(missing, claimer, via)).forEach((r, i) => byId.set(missing[i].id, r));
    return ws.map((w) => byId.get(w.id)!);
  }

  /**
   * @internal A start with a singleton key: inserted, or the row it met (the live workflow
   * holding the key, else the one with its id; `inserted` false). `via`: a caller's transaction.
   */
  async startSingleton(given: InsertWorkflow, claimer?: ClaimTerms, via: Queryable = this.db): Promise<InsertResult & { id: string }> {
    const [w] = await this.payloads.starts([given]);
    const params = singletonStartParams(w, claimer, this.clockOffset());
    for (;;) {
      const [r] = await via.query<StartRow & { id: string }>(this.singletonSql, params);
      // None: what the insert met committed after this statement's snapshot; a new statement sees it
      // (in a caller's repeatable read or serializable transaction PostgreSQL raises 40001 instead).
      if (r)
        return { id: r.id, inserted: r.inserted, status: r.status, version: r.version, claimEpoch: r.claim_epoch ?? null, signalId: null };
    }
  }

  /**
   * @internal
   * Replaces a terminal run under the same id with a fresh one, history cleared, atomically;
   * its claim (claim 'mine' with a claimer) and start signal are written in the same transaction.
   */
  async restart(w: InsertWorkflow, expectedVersion: number, claimer?: ClaimTerms): Promise<RestartResult | null> {
    const off = this.clockOffset();
    // The input is encoded before the transaction opens; the start signal by insertSignal.
    const input = await this.payloads.encode(w.input);
    const headers = await this.payloads.encode(w.headers ?? null);
    return this.client.transaction(async (client: PoolClient) => {
      const res = await client.query(this.wf.restart, [
        w.id,
        expectedVersion,
        w.type,
        w.status,
        jsonParam(input),
        w.parentId,
        plus(w.deadlineInMs, off),
        plus(w.startInMs, off),
        w.traceContext ?? null,
        w.workflowVersion ?? null,
        w.queue ?? null,
        w.priority ?? 0,
        w.partitionKey ?? null,
        w.attributes ? JSON.stringify(w.attributes) : null,
        jsonOrNullParam(headers),
      ]);
      if (res.rowCount !== 1) return null;
      for (const stmt of this.wf.clearHistory) await client.query(stmt, [w.id]);
      if (w.timers.length) await client.query(this.wf.insertTimers, [w.id, JSON.stringify(timersJson(w, off))]);
      let claimEpoch: string | null = null;
      if (claimer && w.claim === 'mine') {
        const c = await client.query(this.wf.restartClaim, [w.id, claimer.engineId, claimer.ttlMs, claimer.graceMs]);
        claimEpoch = (c.rows[0]?.epoch as string | undefined) ?? null;
      }
      const signalId = w.signal ? await this.messages.insertSignal(client, w.id, w.signal.name, w.signal.payload) : null;
      return { version: res.rows[0].version as number, runNumber: res.rows[0].run_number as number, claimEpoch, signalId };
    });
  }

  /** @internal */
  async load(id: string): Promise<LoadedWorkflow | null> {
    return (await this.loadMany([id]))[0];
  }

  /** @internal Several workflows in one statement (recovery, a burst of wakes); null for an id that does not exist. */
  async loadMany(ids: string[]): Promise<Array<LoadedWorkflow | null>> {
    const rows = await this.db.query<Record<string, unknown>>(this.wf.load, [ids]);
    const off = this.clockOffset();
    const byId = new Map(rows.map((r) => [r.id as string, r]));
    return Promise.all(
      ids.map(async (id) => {
        const r = byId.get(id);
        if (!r) return null;
        const loaded = loadedFrom(r, off);
        await Promise.all([
          this.payloads.row(loaded.row),
          this.payloads.headers(loaded),
          this.payloads.history(loaded.history),
          this.payloads.inbox(loaded.inbox),
          decodeStepProgress(this.payloads, loaded.progress),
        ]);
        return loaded;
      }),
    );
  }

  /** @internal Live workflows and up to 20 of them that no stored timer or live child would move on (statement `untimed`). */
  async untimed(): Promise<{ live: number; untimed: string[] }> {
    const [r] = await this.db.query<{ live: number; untimed: string[] | null }>(this.wf.untimed, []);
    return { live: r.live, untimed: r.untimed ?? [] };
  }

  /** One workflow's row, or null. */
  async get(id: string): Promise<WorkflowRow | null> {
    return this.getOn(this.db, id);
  }

  /** @internal One workflow's row read on `via`, a caller's transaction (a transactional cancel). */
  async getOn(via: Queryable, id: string): Promise<WorkflowRow | null> {
    const rows = await via.query(this.wf.get, [id]);
    return rows.length ? this.payloads.row(mapWorkflowRow(rows[0])) : null;
  }

  /**
   * By creation time (oldest first, or newest with `newest`), `limit` at most, after a
   * (createdAt, id) position in that order; filtered by attributes through their GIN index
   * (workflow-list.ts builds the text: its shape from the filter's, every value a parameter).
   */
  async list(filter: ListQuery): Promise<Array<WorkflowRow & { cursorAt: string; input?: unknown; output?: unknown }>> {
    const { sql, params } = listStatement(this.schema, filter);
    const rows = await this.db.query(sql, params);
    return Promise.all(
      rows.map(async (r) => {
        const row: WorkflowRow & { cursorAt: string; input?: unknown; output?: unknown } = {
          ...mapWorkflowRow(r),
          cursorAt: r.cursor_at as string,
        };
        if (!filter.include?.includes('input')) delete row.input;
        if (!filter.include?.includes('output')) delete row.output;
        return this.payloads.row(row);
      }),
    );
  }

  /** @internal A queue's partition keys with work, busiest first, at most `limit`, and how many there are (workflow-partitions.ts). */
  async queuePartitions(queue: string, limit: number): Promise<{ keysWithWork: number; partitions: PartitionFigures[] }> {
    return partitionsFrom(await this.db.query<PartitionRow>(this.partitionsSql, [queue, limit]));
  }

  /** @internal */
  async runningPage(afterId: string, limit: number, types: string[]): Promise<Array<{ id: string; type: string }>> {
    if (types.length === 0) return [];
    return this.db.query(this.wf.runningIds, [afterId, limit, types]);
  }
}
