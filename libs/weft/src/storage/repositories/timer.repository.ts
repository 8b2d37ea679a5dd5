// weft_timers: durable timers (sleeps, wait timeouts, delayed starts, execution deadlines).
// Timers are written by the advance and start statements (workflow.repository.ts); this takes them.
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
  return `
      WITH due AS (
        SELECT id, fire_at FROM ${timers} t WHERE fire_at <= clock_timestamp()
          -- Probes by key for each due timer, never a semi-join: a generic plan hashed all of
          -- weft_workflows for that on every tick (hot-path-plans.spec.ts).
          ${ownerFilter}
          AND (SELECT w.type FROM ${wf} w WHERE w.id = t.workflow_id) = ANY($3::text[])
        ORDER BY fire_at LIMIT $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${timers} t SET fire_at = clock_timestamp() + $2 * interval '1 millisecond'
      FROM due WHERE t.id = due.id
      RETURNING t.id, t.workflow_id, t.kind, t.seq, due.fire_at,
        (SELECT w.fence_epoch::text FROM ${wf} w WHERE w.id = t.workflow_id) AS fence_epoch`;
}

function statements(schema: string) {
  return { takeDue: takeDueSql(schema, false), takeDueOwned: takeDueSql(schema, true) };
}

export class TimerRepository extends WeftRepository<TimerEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(db: SqlAccess, schema: string) {
    super(db, TimerEntity, 'weft_timers');
    this.q = statements(schema);
  }

  /** Due timers, locked and pushed `retryAfterMs` ahead; see the statement above. */
  async takeDue(limit: number, retryAfterMs: number, ownerEngineId: string | null, types: string[]): Promise<TimerRow[]> {
    const rows = await this.db.query<Record<string, unknown>>(
      ownerEngineId === null ? this.q.takeDue : this.q.takeDueOwned,
      ownerEngineId === null ? [limit, retryAfterMs, types] : [limit, retryAfterMs, types, ownerEngineId],
    );
    return rows.map((r) => ({
      id: String(r.id),
      workflowId: r.workflow_id as string,
      kind: r.kind as TimerRow['kind'],
      seq: r.seq as number,
      fireAt: r.fire_at as Date,
      fenceEpoch: (r.fence_epoch as string | null) ?? null,
    }));
  }
}
