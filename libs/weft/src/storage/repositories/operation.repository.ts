// weft_operations: a workflow's recorded history. Rows are written by the advance statement
// (workflow.repository.ts) in the same transaction as the workflow row; this reads them.
import { OperationEntity } from '../entities/operation.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import type { OperationRecord } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import { Payloads } from '../payloads.js';

function statements(schema: string) {
  const ops = qualify(schema, 'weft_operations');
  return {
    history: `SELECT seq, kind, name, status, result, error, attempts, started_at, completed_at, event
              FROM ${ops} WHERE workflow_id = $1 ORDER BY seq`,
  };
}

/** weft_operations, read side. Injectable from WeftModule. */
export class OperationRepository extends WeftRepository<OperationEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal Built by the engine; inject it from WeftModule. */
  constructor(
    db: SqlAccess,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, OperationEntity, 'weft_operations');
    this.q = statements(schema);
  }

  /** The recorded operations of one workflow, in sequence order. */
  async history(workflowId: string): Promise<OperationRecord[]> {
    const rows = await this.db.query<Record<string, unknown>>(this.q.history, [workflowId]);
    const ops = rows.map((r) => ({
      seq: r.seq as number,
      kind: r.kind as OperationRecord['kind'], // a kind this version does not know is shown as stored
      name: r.name as string,
      status: r.status as 'completed' | 'failed',
      result: r.result,
      error: r.error,
      attempts: r.attempts as number,
      startedAt: r.started_at ? (r.started_at as Date).toISOString() : null,
      event: (r.event as number | null) ?? null,
    }));
    return this.payloads.history(ops);
  }
}
