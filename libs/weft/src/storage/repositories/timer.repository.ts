// weft_timers: durable timers (sleeps, wait timeouts, delayed starts, execution deadlines).
// Timers are written by the advance and start statements (workflow.repository.ts); this takes them.
import { TimerEntity } from '../entities/timer.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';
import type { TimerRow } from '../types.js';

function statements(schema: string) {
  const timers = qualify(schema, 'weft_timers');
  const claims = qualify(schema, 'weft_workflow_claims');
  const wf = qualify(schema, 'weft_workflows');
  return {
    /**
     * One query per tick: due timers, locked so concurrent pollers split them, and pushed
     * $2 ms into the future so a crash before the wake commits makes them fire again later.
     * The commit that consumes a timer deletes it. With $3 (an engine id, ownership
     * 'workflow-lease') timers of a workflow's own operations (sleeps, wait timeouts: seq >= 0)
     * are only taken for workflows that engine holds; delayed starts and deadlines by anyone; $4 limits them
     * to the workflow types the engine has registered (services sharing one database).
     */
    takeDue: `
      WITH due AS (
        SELECT id, fire_at FROM ${timers} t WHERE fire_at <= clock_timestamp()
          -- Probes by key for each due timer, never a semi-join: a generic plan hashed all of
          -- weft_workflows for that on every tick (hot-path-plans.spec.ts).
          AND ($3::text IS NULL OR t.seq < 0 OR (SELECT c.engine_id FROM ${claims} c WHERE c.workflow_id = t.workflow_id) = $3)
          AND (SELECT w.type FROM ${wf} w WHERE w.id = t.workflow_id) = ANY($4::text[])
        ORDER BY fire_at LIMIT $1 FOR UPDATE SKIP LOCKED
      )
      UPDATE ${timers} t SET fire_at = clock_timestamp() + $2 * interval '1 millisecond'
      FROM due WHERE t.id = due.id
      RETURNING t.id, t.workflow_id, t.kind, t.seq, due.fire_at,
        (SELECT w.fence_epoch::text FROM ${wf} w WHERE w.id = t.workflow_id) AS fence_epoch`,
  };
}

export class TimerRepository extends WeftRepository<TimerEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(db: SqlAccess, schema: string) {
    super(db, TimerEntity, 'weft_timers');
    this.q = statements(schema);
  }

  /** Due timers, locked and pushed `retryAfterMs` ahead; see the statement above. */
  async takeDue(limit: number, retryAfterMs: number, ownerEngineId: string | null, types: string[]): Promise<TimerRow[]> {
    const rows = await this.db.query<Record<string, unknown>>(this.q.takeDue, [limit, retryAfterMs, ownerEngineId, types]);
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
