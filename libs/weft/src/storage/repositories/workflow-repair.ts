// engine.retry and engine.fork (docs/api.md, "Repair"): the history cut at a seq and the run set
// going again, each in one transaction so that no engine ever sees a run without its kept history.
import type { PoolClient } from 'pg';
import { qualify } from '../schema-name.js';
import type { SqlClient } from '../sql-client.js';
import type { WorkflowAttributes } from '../../common/types.js';
import { Payloads } from '../payloads.js';

export interface ForkOrigin {
  workflowId: string;
  runNumber: number;
  fromSeq: number;
}

export interface RetryOrigin {
  runNumber: number;
  fromSeq: number;
}

function statements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  const ops = qualify(schema, 'weft_operations');
  const msgs = qualify(schema, 'weft_messages');
  const timers = qualify(schema, 'weft_timers');
  const claims = qualify(schema, 'weft_workflow_claims');
  return {
    /** Only a failed run, at the version read: a second retry meanwhile finds it running. */
    retry: `UPDATE ${wf} SET status = 'running', output = NULL, error = NULL, completed_at = NULL, run_number = run_number + 1,
              version = version + 1, updated_at = clock_timestamp(), retried_from = $3::jsonb
            WHERE id = $1 AND version = $2 AND status = 'failed'
            RETURNING version, run_number`,
    cut: `DELETE FROM ${ops} WHERE workflow_id = $1 AND seq >= $2`,
    /** Signals and child ends the cut part took are waiting again for the code that runs again. */
    reopen: `UPDATE ${msgs} SET consumed_seq = NULL WHERE workflow_id = $1 AND consumed_seq >= $2 AND kind IN ('signal', 'child')`,
    clearTimers: `DELETE FROM ${timers} WHERE workflow_id = $1`,
    // The fork keeps the source's headers as stored (encoded or not: same codec, same engines).
    forkRow: `INSERT INTO ${wf} (id, type, status, input, parent_id, version, workflow_version, attributes, forked_from, headers)
              VALUES ($1, $2, 'running', $3::json, NULL, 1, $4, $5::jsonb, $6::jsonb,
                      (SELECT s.headers FROM ${wf} s WHERE s.id = $6::jsonb->>'workflowId'))
              ON CONFLICT (id) DO NOTHING RETURNING id`,
    forkHistory: `INSERT INTO ${ops} (workflow_id, seq, kind, name, status, result, error, attempts, event, started_at, completed_at)
                  SELECT $1, seq, kind, name, status, result, error, attempts, event, started_at, completed_at
                  FROM ${ops} WHERE workflow_id = $2 AND seq < $3`,
    /** A claim row with no holder (ownership 'workflow-lease'): the forking engine, or any other, acquires it. */
    freeClaim: `INSERT INTO ${claims} (workflow_id) VALUES ($1) ON CONFLICT (workflow_id) DO NOTHING`,
  };
}

/** The writes of fork and retry; WorkflowRepository hands them out. */
export class WorkflowRepair {
  private readonly sql: ReturnType<typeof statements>;

  constructor(
    private readonly client: SqlClient,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    this.sql = statements(schema);
  }

  /**
   * The failed run goes on as run + 1 from `origin.fromSeq`: operations from there are deleted,
   * what they consumed is waiting again, timers are gone. Null when it is no longer the failed
   * run at `expectedVersion` (retried or purged meanwhile).
   */
  async retry(id: string, expectedVersion: number, origin: RetryOrigin): Promise<{ version: number; runNumber: number } | null> {
    return this.client.transaction(async (c: PoolClient) => {
      const res = await c.query(this.sql.retry, [id, expectedVersion, JSON.stringify(origin)]);
      if (res.rowCount !== 1) return null;
      await c.query(this.sql.cut, [id, origin.fromSeq]);
      await c.query(this.sql.reopen, [id, origin.fromSeq]);
      await c.query(this.sql.clearTimers, [id]);
      return { version: res.rows[0].version as number, runNumber: res.rows[0].run_number as number };
    });
  }

  /**
   * A new running workflow `id` with the source's operations before `origin.fromSeq`; false when
   * the id is taken. `freeClaim`: write its claim row with no holder (ownership 'workflow-lease').
   */
  async fork(
    id: string,
    row: { type: string; input: unknown; workflowVersion: string | null; attributes: WorkflowAttributes },
    origin: ForkOrigin,
    freeClaim: boolean,
  ): Promise<boolean> {
    // Encoded before the transaction opens: a KMS call must not hold a connection in a transaction.
    const input = JSON.stringify((await this.payloads.encode(row.input)) ?? null);
    return this.client.transaction(async (c: PoolClient) => {
      const attributes = Object.keys(row.attributes).length ? JSON.stringify(row.attributes) : null;
      const res = await c.query(this.sql.forkRow, [id, row.type, input, row.workflowVersion, attributes, JSON.stringify(origin)]);
      if (res.rowCount !== 1) return false;
      await c.query(this.sql.forkHistory, [id, origin.workflowId, origin.fromSeq]);
      if (freeClaim) await c.query(this.sql.freeClaim, [id]);
      return true;
    });
  }
}
