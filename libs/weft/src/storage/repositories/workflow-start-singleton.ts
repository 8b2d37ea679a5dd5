// The start of a workflow with a singleton key (docs/queues.md): at most one live workflow of a
// type per key, held by the partial unique index weft_workflows_singleton_idx. The insert yields to
// any conflict (its id, or the key held by a live workflow) and the statement returns the row it
// met instead, so the caller returns that workflow's handle or refuses. Off the hot path: a
// start without a key never comes here.
import { LIVE } from './workflow-purge.js';
import { qualify } from '../schema-name.js';
import { jsonOrNullParam, type Queryable, type SqlClient } from '../sql-client.js';
import type { WorkflowStatus } from '../../common/types.js';
import { claimFreeSql, type ClaimTerms } from './claim.repository.js';
import type { InsertWorkflow } from '../types.js';
import { Payloads } from '../payloads.js';

const ms = `* interval '1 millisecond'`;

/**
 * $1 id, $2 type, $3 status, $4 input, $5 parent, $6 trace context, $7 workflow version, $8 queue,
 * $9 priority, $10 partition key, $11 singleton key, $12 deadline and $13 start (ms from now),
 * $14 timers, $15 the claiming engine (null: not claimed here), $16 TTL, $17 grace, $18 headers,
 * $19 the claim row to write ('mine'; 'free': one with no holder, for the reclaim scans; null: none),
 * $20 attributes. Delays and timers are on the workflow clock (singletonStartParams adds its offset).
 */
export function singletonStartSql(schema: string): string {
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  const timers = qualify(schema, 'weft_timers');
  const later = (p: string) => `CASE WHEN ${p}::float8 IS NULL THEN NULL ELSE clock_timestamp() + ${p}::float8 ${ms} END`;
  return `
    WITH ins AS (
      INSERT INTO ${wf} (id, type, status, input, parent_id, deadline, start_at, version, trace_context, workflow_version, queue, priority,
                         partition_key, singleton_key, fence_epoch, headers, attributes)
      VALUES ($1::text, $2::text, $3::text, $4::json, $5::text, ${later('$12')}, ${later('$13')}, 1, $6::text, $7::text, $8::text,
              COALESCE($9::int, 0), $10::text, $11::text,
              CASE WHEN $15::text IS NOT NULL THEN COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = $1::text), 0) + 1 END,
              $18::json, $20::jsonb)
      ON CONFLICT DO NOTHING
      RETURNING id, status, version, fence_epoch
    ),
    ins_timers AS (
      INSERT INTO ${timers} (workflow_id, kind, seq, fire_at)
      SELECT ins.id, x.kind, -1, clock_timestamp() + x.delay_ms ${ms}
      FROM ins, json_to_recordset($14::json) AS x(kind text, delay_ms double precision)
    ),
    -- A claim held by $15, or ($19 'free': a start in a caller's transaction) a row with no holder
    -- for the reclaim scans; a row an earlier run of the id left is taken only by a holder, if free.
    ins_claims AS (
      INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
      SELECT ins.id, CASE WHEN $15::text IS NOT NULL THEN 1 ELSE 0 END, $15::text,
             clock_timestamp() + $16::float8 ${ms}, CASE WHEN $15::text IS NOT NULL THEN clock_timestamp() END
      FROM ins WHERE $19::text IS NOT NULL
      ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
        expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
      WHERE EXCLUDED.engine_id IS NOT NULL AND ${claimFreeSql(schema, 'cl', '$17::float8')}
      RETURNING workflow_id, epoch::text AS epoch
    )
    SELECT ins.id, ins.status, ins.version, true AS inserted,
           (SELECT ic.epoch FROM ins_claims ic WHERE ic.epoch = ins.fence_epoch::text) AS claim_epoch
    FROM ins
    UNION ALL
    -- What the insert met: the live workflow holding the key first, else the id. None when that row
    -- committed after this statement's snapshot: the caller asks again.
    (SELECT w.id, w.status, w.version, false, NULL FROM ${wf} w
     WHERE NOT EXISTS (SELECT 1 FROM ins)
       AND (w.id = $1::text OR (w.type = $2::text AND w.singleton_key = $11::text AND w.status IN (${LIVE})))
     ORDER BY (w.singleton_key IS NOT DISTINCT FROM $11::text AND w.status IN (${LIVE})) DESC
     LIMIT 1)`;
}

const onClock = (ms: number | null, off: number) => (ms === null ? null : ms + off);

/** `off`: the workflow clock's offset (common/clock.ts), added to every delay as startMany does. */
export function singletonStartParams(w: InsertWorkflow, claimer: ClaimTerms | undefined, off = 0): unknown[] {
  const mine = claimer && w.claim === 'mine' ? [claimer.engineId, claimer.ttlMs, claimer.graceMs] : [null, null, null];
  return [
    w.id,
    w.type,
    w.status,
    jsonOrNullParam(w.input),
    w.parentId ?? null,
    w.traceContext ?? null,
    w.workflowVersion ?? null,
    w.queue ?? null,
    w.priority ?? null,
    w.partitionKey ?? null,
    w.singletonKey ?? null,
    onClock(w.deadlineInMs, off),
    onClock(w.startInMs, off),
    JSON.stringify(w.timers.map((t) => ({ kind: t.kind, delay_ms: t.delayMs + off }))),
    ...mine,
    jsonOrNullParam(w.headers ?? null),
    claimer ? (w.claim ?? null) : null,
    w.attributes ? JSON.stringify(w.attributes) : null,
  ];
}

/**
 * The statuses a waiter for a key is looked up by: pending, and enqueued, which no waiter has (it
 * takes its key while pending). Named so that weft_workflows_status_type_idx, which holds no
 * enqueued row, serves no such probe: weft_workflows_singleton_wait_idx does (docs/decisions/0061).
 */
const WAITING = `('pending', 'enqueued')`;

/**
 * Singleton starts that queue (onConflict 'queue', docs/decisions/0034): a start that meets the
 * key's live holder is stored `pending` with `singleton_wait` and a delayed-start timer; each fire
 * of that timer tries to take the key (only the oldest waiter of the key may), and the fire starts
 * it once it holds the key; otherwise the timer is set to try again shortly.
 */
function waitStatements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  const timers = qualify(schema, 'weft_timers');
  const later = (p: string) => `CASE WHEN ${p}::float8 IS NULL THEN NULL ELSE clock_timestamp() + ${p}::float8 ${ms} END`;
  return {
    /**
     * $1 id, $2 type, $3 input, $4 parent, $5 trace context, $6 workflow version, $7 queue, $8 priority,
     * $9 partition key, $10 the key waited for, $11 attributes, $12 deadline and $13 start (ms from now), $14 timers, $15 headers.
     */
    queueBehind: `
      WITH ins AS (
        INSERT INTO ${wf} (id, type, status, input, parent_id, deadline, start_at, version, trace_context, workflow_version, queue,
                           priority, partition_key, singleton_wait, attributes, headers)
        VALUES ($1::text, $2::text, 'pending', $3::json, $4::text, ${later('$12')}, ${later('$13')}, 1, $5::text, $6::text, $7::text,
                COALESCE($8::int, 0), $9::text, $10::text, $11::jsonb, $15::json)
        ON CONFLICT (id) DO NOTHING
        RETURNING id, status, version
      ),
      ins_timers AS (
        INSERT INTO ${timers} (workflow_id, kind, seq, fire_at)
        SELECT ins.id, x.kind, -1, clock_timestamp() + x.delay_ms ${ms}
        FROM ins, json_to_recordset($14::json) AS x(kind text, delay_ms double precision)
      )
      SELECT id, status, version, true AS inserted FROM ins
      UNION ALL
      SELECT id, status, version, false FROM ${wf} WHERE id = $1::text AND NOT EXISTS (SELECT 1 FROM ins)`,
    /**
     * The waiter $1 takes its key: only when no live workflow holds it and no older waiter waits for
     * it. The row is named by its key alone, the rest of its conditions in one expression no index
     * serves, and the holder and the older waiters are probed with the row's values (WAITING):
     * after an ANALYZE that saw no pending workflow, generic plans read every pending workflow
     * through weft_workflows_status_type_idx, and every live holder of every key (docs/decisions/0061).
     */
    promote: `
      UPDATE ${wf} w SET singleton_key = w.singleton_wait, singleton_wait = NULL
      WHERE w.id = $1
        AND CASE WHEN w.status = 'pending' AND w.singleton_wait IS NOT NULL THEN
              (SELECT o.id FROM ${wf} o WHERE o.type = w.type AND o.singleton_key = w.singleton_wait AND o.status IN (${LIVE}) LIMIT 1)
                IS NULL
              AND (SELECT o.id FROM ${wf} o WHERE o.status IN ${WAITING} AND o.type = w.type AND o.singleton_wait = w.singleton_wait
                     AND (o.created_at, o.id) < (w.created_at, w.id) LIMIT 1) IS NULL
            ELSE false END
      RETURNING w.id`,
    /** The waiter's timer fires again in $2 ms (workflow time: $3 is the clock's offset). */
    recheck: `UPDATE ${timers} SET fire_at = clock_timestamp() + ($2::float8 + $3::float8) ${ms}
              WHERE workflow_id = $1 AND kind = 'delayed-start' AND seq = -1 AND fire_at > clock_timestamp() + $3::float8 ${ms}`,
    /**
     * Workflow $1 ended: the oldest start waiting for the key it held is due now ($2: the clock's
     * offset). A recheck that lands after this leaves it due (recheck moves only a timer not due).
     * Probes by key, as promote's (docs/decisions/0061).
     */
    wakeNext: `UPDATE ${timers} t SET fire_at = clock_timestamp() + $2::float8 ${ms}
      WHERE t.workflow_id = (
          SELECT (SELECT o.id FROM ${wf} o WHERE o.status IN ${WAITING} AND o.type = h.type AND o.singleton_wait = h.singleton_key
                  ORDER BY o.created_at, o.id LIMIT 1)
          FROM ${wf} h WHERE h.id = $1 AND h.singleton_key IS NOT NULL)
        AND t.kind = 'delayed-start' AND t.seq = -1
      RETURNING t.workflow_id`,
  };
}

/**
 * How often a queued singleton start looks whether its key is free: a backstop. The holder's end
 * makes the oldest waiter due at once (wakeNext), on whichever engine it ends.
 */
export const SINGLETON_RECHECK_MS = 2000;

export class SingletonWaits {
  private readonly sql: ReturnType<typeof waitStatements>;

  constructor(
    private readonly client: SqlClient,
    schema: string,
    private readonly clockOffset: () => number,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    this.sql = waitStatements(schema);
  }

  /**
   * Stores a start that waits for `key`; or, when its id exists, that row's status (the id policy
   * applies). `via`: a caller's transaction (the start waits in line once that commits).
   */
  async queueBehind(
    w: InsertWorkflow,
    key: string,
    via: Queryable = this.client,
  ): Promise<{ inserted: boolean; status: WorkflowStatus; version: number }> {
    const off = this.clockOffset();
    const timers = w.timers.some((t) => t.kind === 'delayed-start') ? w.timers : [{ kind: 'delayed-start', delayMs: 0 }, ...w.timers];
    const [r] = await via.query<{ inserted: boolean; status: WorkflowStatus; version: number }>(this.sql.queueBehind, [
      w.id,
      w.type,
      jsonOrNullParam(await this.payloads.encode(w.input)),
      w.parentId ?? null,
      w.traceContext ?? null,
      w.workflowVersion ?? null,
      w.queue ?? null,
      w.priority ?? null,
      w.partitionKey ?? null,
      key,
      w.attributes ? JSON.stringify(w.attributes) : null,
      w.deadlineInMs === null ? null : w.deadlineInMs + off,
      (w.startInMs ?? 0) + off,
      JSON.stringify(timers.map((t) => ({ kind: t.kind, delay_ms: t.delayMs + off }))),
      jsonOrNullParam(await this.payloads.encode(w.headers ?? null)),
    ]);
    return r;
  }

  /** True when waiter `id` now holds its key (or was not waiting); false: try again later (recheck). */
  async promote(id: string): Promise<boolean> {
    try {
      return (await this.client.query(this.sql.promote, [id])).length === 1;
    } catch (err) {
      // A start that found the key free took it between the check and the update.
      if ((err as { code?: string }).code === '23505') return false;
      throw err;
    }
  }

  async recheck(id: string, inMs = SINGLETON_RECHECK_MS): Promise<void> {
    await this.client.query(this.sql.recheck, [id, inMs, this.clockOffset()]);
  }

  /** Workflow `id` ended: true when a start waiting for its singleton key was made due now. */
  async wakeNext(id: string): Promise<boolean> {
    return (await this.client.query(this.sql.wakeNext, [id, this.clockOffset()])).length > 0;
  }
}
