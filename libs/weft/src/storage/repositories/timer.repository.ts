// weft_timers: durable timers (sleeps, wait timeouts, delayed starts, execution deadlines).
// Timers are written by the advance and start statements (workflow.repository.ts); this takes them.
import type { ClockOffset } from '../../common/clock.js';
import { TimerEntity } from '../entities/timer.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';
import type { TimerRow } from '../types.js';

/**
 * One query per tick: due timers, locked so concurrent pollers split them, and pushed $2 ms into
 * the future so a crash before the wake commits makes them fire again later. The commit that
 * consumes a timer deletes it. `owned` (ownership 'workflow-lease'): timers of a workflow's own
 * operations (sleeps, wait timeouts: seq >= 0) are only taken for workflows engine $4 holds;
 * delayed starts and deadlines by anyone. $3 limits them to the workflow types the engine has
 * registered (services sharing one database). Two texts rather than a NULL $4 meaning "any
 * owner": a NULL folded into custom plans made them look cheaper than the generic plan, and the
 * statement was planned afresh on every tick (plan-cache.spec.ts).
 */
function takeDueSql(schema: string, owned: boolean): string {
  const timers = qualify(schema, 'weft_timers');
  const claims = qualify(schema, 'weft_workflow_claims');
  const wf = qualify(schema, 'weft_workflows');
  const ownerFilter = owned ? `AND (t.seq < 0 OR (SELECT c.engine_id FROM ${claims} c WHERE c.workflow_id = t.workflow_id) = $4)` : '';
  const now = workflowNow(owned ? '$5' : '$4');
  return `
      WITH due AS (
        SELECT id, fire_at FROM ${timers} t WHERE fire_at <= ${now}
          -- Probes by key for each due timer, never a semi-join: a generic plan hashed all of
          -- weft_workflows for that on every tick (hot-path-plans.spec.ts).
          ${ownerFilter}
          AND (SELECT w.type FROM ${wf} w WHERE w.id = t.workflow_id) = ANY($3::text[])
        ORDER BY fire_at LIMIT $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${timers} t SET fire_at = ${now} + $2 * interval '1 millisecond'
      FROM due WHERE t.id = due.id
      RETURNING t.id, t.workflow_id, t.kind, t.seq, due.fire_at,
        (SELECT w.fence_epoch::text FROM ${wf} w WHERE w.id = t.workflow_id) AS fence_epoch`;
}

/**
 * Timers of workflows' own waits (seq >= 0), each taken as takeDue takes it, when their owner
 * armed them in-process (engine/local-timers.ts); fires due together share the statement. $1/$2
 * the workflow ids and seqs, $3 the retry delay, $4 (owned) the engine that must hold the claim.
 * A timer not due yet by the database clock comes back with the ms still to wait (id NULL); one
 * taken or locked elsewhere, or gone, does not come back.
 */
function takeOwnSql(schema: string, owned: boolean): string {
  const timers = qualify(schema, 'weft_timers');
  const wf = qualify(schema, 'weft_workflows');
  const ownerFilter = owned
    ? `AND (SELECT c.engine_id FROM ${qualify(schema, 'weft_workflow_claims')} c WHERE c.workflow_id = t.workflow_id) = $4`
    : '';
  const now = workflowNow(owned ? '$5' : '$4');
  return `
      WITH want AS (SELECT * FROM unnest($1::text[], $2::int[]) AS x(workflow_id, seq)),
      due AS (
        SELECT t.id, t.fire_at FROM ${timers} t JOIN want ON t.workflow_id = want.workflow_id AND t.seq = want.seq
        WHERE t.workflow_id = ANY($1::text[]) AND t.fire_at <= ${now} ${ownerFilter}
        FOR UPDATE OF t SKIP LOCKED
      ),
      taken AS (
        UPDATE ${timers} t SET fire_at = ${now} + $3 * interval '1 millisecond'
        FROM due WHERE t.id = due.id
        RETURNING t.id, t.workflow_id, t.kind, t.seq, due.fire_at,
          (SELECT w.fence_epoch::text FROM ${wf} w WHERE w.id = t.workflow_id) AS fence_epoch
      )
      SELECT id, workflow_id, kind, seq, fire_at, fence_epoch, NULL::float8 AS wait_ms FROM taken
      UNION ALL
      SELECT NULL, t.workflow_id, NULL, t.seq, NULL, NULL, EXTRACT(EPOCH FROM (t.fire_at - ${now})) * 1000
      FROM ${timers} t JOIN want ON t.workflow_id = want.workflow_id AND t.seq = want.seq
      WHERE t.workflow_id = ANY($1::text[]) AND t.fire_at > ${now}`;
}

/** Workflow time in SQL: the database clock plus the workflow clock's offset, parameter `p` (common/clock.ts). */
export const workflowNow = (p: string) => `(clock_timestamp() + ${p}::float8 * interval '1 millisecond')`;

function statements(schema: string) {
  const timers = qualify(schema, 'weft_timers');
  return {
    takeDue: takeDueSql(schema, false),
    takeDueOwned: takeDueSql(schema, true),
    takeOwn: takeOwnSql(schema, false),
    takeOwnOwned: takeOwnSql(schema, true),
    /** A taken timer whose wake was not delivered (its engine is going): due again at its own time. */
    putBack: `UPDATE ${timers} SET fire_at = $2 WHERE id = $1::bigint`,
    /** The earliest timer after $1, on workflow time (the testing kit's clock skips to it). */
    nextFireAt: `SELECT min(fire_at) AS at FROM ${timers} WHERE fire_at > $1`,
    /** A workflow-level timer that found its workflow ended (a cancel's deadline after the code returned). */
    drop: `DELETE FROM ${timers} WHERE id = $1::bigint`,
  };
}

export class TimerRepository extends WeftRepository<TimerEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(
    db: SqlAccess,
    schema: string,
    private readonly clockOffset: ClockOffset = () => 0,
  ) {
    super(db, TimerEntity, 'weft_timers');
    this.q = statements(schema);
  }

  /** Due timers, locked and pushed `retryAfterMs` ahead; see the statement above. */
  async takeDue(limit: number, retryAfterMs: number, ownerEngineId: string | null, types: string[]): Promise<TimerRow[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      ownerEngineId === null ? this.q.takeDue : this.q.takeDueOwned,
      ownerEngineId === null
        ? [limit, retryAfterMs, types, this.clockOffset()]
        : [limit, retryAfterMs, types, ownerEngineId, this.clockOffset()],
    );
    return rows.map(mapTimerRow);
  }

  /** Own timers, each taken if due (see takeOwnSql), else the ms it is still to wait, or null when there is nothing to take. */
  async takeOwn(
    wanted: Array<{ workflowId: string; seq: number }>,
    retryAfterMs: number,
    ownerEngineId: string | null,
  ): Promise<OwnTimerTake[]> {
    const ids = wanted.map((w) => w.workflowId);
    const seqs = wanted.map((w) => w.seq);
    const rows = await this.db.query<Record<string, unknown>>(
      ownerEngineId === null ? this.q.takeOwn : this.q.takeOwnOwned,
      ownerEngineId === null ? [ids, seqs, retryAfterMs, this.clockOffset()] : [ids, seqs, retryAfterMs, ownerEngineId, this.clockOffset()],
    );
    const byKey = new Map<string, OwnTimerTake>();
    for (const r of rows) {
      const take = r.id === null ? { waitMs: Math.max(1, Math.ceil(Number(r.wait_ms))) } : { taken: mapTimerRow(r) };
      byKey.set(`${r.workflow_id as string}\u0000${r.seq as number}`, take);
    }
    return wanted.map((w) => byKey.get(`${w.workflowId}\u0000${w.seq}`) ?? null);
  }

  /** Deletes one taken timer that has nothing left to do. */
  async drop(id: string): Promise<void> {
    await this.db.query(this.q.drop, [id]);
  }

  /**
   * Undoes a take (takeDue / takeOwn push a taken timer `retryAfterMs` ahead, for an engine that dies
   * before its wake commits): for an engine that is shutting down and did not wake the run, so the
   * workflow's next owner fires it at its due time, not that much later. Gone already: nothing.
   */
  async putBack(timer: TimerRow): Promise<void> {
    await this.db.query(this.q.putBack, [timer.id, timer.fireAt]);
  }

  /** @internal The earliest fire time after `after` (workflow time), or null when there is none. */
  async nextFireAt(after: Date): Promise<Date | null> {
    const [row] = await this.db.query<{ at: Date | null }>(this.q.nextFireAt, [after]);
    return row?.at ?? null;
  }
}

/** What takeOwn did with one timer: took it, found it not due yet, or nothing (null). */
export type OwnTimerTake = { taken: TimerRow } | { waitMs: number } | null;

const mapTimerRow = (r: Record<string, unknown>): TimerRow => ({
  id: String(r.id),
  workflowId: r.workflow_id as string,
  kind: r.kind as TimerRow['kind'],
  seq: r.seq as number,
  fireAt: r.fire_at as Date,
  fenceEpoch: (r.fence_epoch as string | null) ?? null,
});
