// weft_events: ctx.setEvent's latest value per (workflow, key). Rows are written by the advance
// statement that carries the call (advance-parts.ts, `events`) and removed with their workflow by
// the foreign key; this reads them.
import { EventEntity } from '../entities/event.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import type { WorkflowEventRecord, WorkflowStatus } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import { Payloads } from '../payloads.js';

function statements(schema: string) {
  const events = qualify(schema, 'weft_events');
  const wf = qualify(schema, 'weft_workflows');
  return {
    /** The workflow's status and the key's event (found: whether there is one). */
    get: `SELECT w.status, e.value, e.workflow_id IS NOT NULL AS found
          FROM ${wf} w LEFT JOIN ${events} e ON e.workflow_id = w.id AND e.key = $2 WHERE w.id = $1`,
    list: `SELECT key, value, updated_at FROM ${events} WHERE workflow_id = $1 ORDER BY key`,
  };
}

/** weft_events, read side. */
export class EventRepository extends WeftRepository<EventEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal Built by the engine. */
  constructor(
    db: SqlAccess,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, EventEntity, 'weft_events');
    this.q = statements(schema);
  }

  /** Null when the workflow does not exist; `found` false while the key has no event. */
  async get(workflowId: string, key: string): Promise<{ status: WorkflowStatus; found: boolean; value: unknown } | null> {
    const [row] = await this.db.query<{ status: WorkflowStatus; found: boolean; value: unknown }>(this.q.get, [workflowId, key]);
    return row ? { ...row, value: await this.payloads.decode(row.value) } : null;
  }

  /** The value an event's NOTIFY carried (its stored JSON text, storage/talk-notice.ts). */
  async fromNotice(storedJson: string): Promise<unknown> {
    return this.payloads.decode(JSON.parse(storedJson));
  }

  /** Every event of a workflow, by key. */
  async list(workflowId: string): Promise<WorkflowEventRecord[]> {
    const rows = await this.db.query<{ key: string; value: unknown; updated_at: Date }>(this.q.list, [workflowId]);
    return Promise.all(rows.map(async (r) => ({ key: r.key, value: await this.payloads.decode(r.value), updatedAt: r.updated_at })));
  }
}
