// The start of ONE workflow with no timers (no deadline, no delayed start) and no start signal:
// what most starts are at low load, and the first of a short workflow's four commits. The same insert and claim as startMany
// (workflow.repository.ts), with the workflow as plain parameters instead of a JSON record set:
// parsing and joining the record set were about a fifth of the start's round trip
// (docs/performance.md). One text per claim kind, so that no parameter decides whether a claim
// is written: a custom plan that folded that away would look cheaper than the generic plan.
import { qualify } from '../schema-name.js';
import { jsonOrNullParam } from '../sql-client.js';
import { claimFreeSql, type ClaimTerms } from './claim.repository.js';
import type { InsertWorkflow } from '../types.js';

/** Which claim the lone start writes: held by the inserting engine, a row with no holder, or none. */
export type LoneStartClaim = 'mine' | 'free' | 'none';

/** Whether `ws` is one start that the lone statement can write. */
export const isLoneStart = (ws: InsertWorkflow[]): boolean =>
  ws.length === 1 && ws[0].timers.length === 0 && ws[0].deadlineInMs === null && ws[0].startInMs === null && !ws[0].signal;

/** The claim `w` is started with, as startMany reads it: none without a claimer. */
export const loneStartClaim = (w: InsertWorkflow, claimer: ClaimTerms | undefined): LoneStartClaim =>
  claimer && w.claim ? w.claim : 'none';

const ms = `* interval '1 millisecond'`;

/**
 * The lone start for one claim kind. Its result rows are startMany's: the inserted row, or the
 * existing one (inserted = false), or no row for an id a transaction committed after this
 * statement's snapshot (the caller asks again). storage/start-lone.spec.ts holds it to the same
 * rows and outcomes as startMany.
 */
export function loneStartSql(schema: string, claim: LoneStartClaim): string {
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  // $1 id, $2 type, $3 status, $4 input, $5 parent, $6 trace context, $7 workflow version, $8 queue,
  // $9 priority, $10 partition key, $11 attributes, $12 headers; 'mine': $13 engine, $14 TTL, $15 grace.
  const fence = claim === 'mine' ? `COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = $1::text), 0) + 1` : 'NULL';
  const insert = `ins AS (
        INSERT INTO ${wf} (id, type, status, input, parent_id, deadline, start_at, version, trace_context, workflow_version, queue, priority,
                           partition_key, fence_epoch, attributes, headers)
        VALUES ($1::text, $2::text, $3::text, $4::json, $5::text, NULL, NULL, 1, $6::text, $7::text, $8::text, COALESCE($9::int, 0), $10::text,
                -- a 'mine' claim's epoch: 1, or one past a row an earlier run of the id left
                ${fence}, $11::jsonb, $12::json)
        ON CONFLICT (id) DO NOTHING
        RETURNING id, status, version, fence_epoch
      )`;
  const claimPart =
    claim === 'mine'
      ? `,
      ins_claims AS (
        INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
        SELECT ins.id, 1, $13::text, clock_timestamp() + $14::float8 ${ms}, clock_timestamp() FROM ins
        ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
          expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
        WHERE ${claimFreeSql(schema, 'cl', '$15::float8')}
        RETURNING workflow_id, epoch::text AS epoch
      )`
      : claim === 'free'
        ? `,
      ins_claims AS (
        -- a row with no holder for other engines' reclaim scans; a row an earlier run left stays as it is
        INSERT INTO ${claims} (workflow_id) SELECT ins.id FROM ins ON CONFLICT (workflow_id) DO NOTHING
      )`
        : '';
  // A claim whose epoch is not the row's fence_epoch (a claim row changed since the snapshot) is not adopted.
  const claimEpoch = claim === 'mine' ? `(SELECT ic.epoch FROM ins_claims ic WHERE ic.epoch = ins.fence_epoch::text)` : 'NULL::text';
  return `WITH ${insert}${claimPart}
      SELECT ins.id, ins.status, ins.version, true AS inserted, ${claimEpoch} AS claim_epoch, NULL::text AS signal_id
      FROM ins
      UNION ALL
      SELECT w.id, w.status, w.version, false, NULL, NULL
      FROM ${wf} w WHERE w.id = $1::text AND NOT EXISTS (SELECT 1 FROM ins)`;
}

/** The lone start's parameters for `w`, in the order of loneStartSql's. */
export function loneStartParams(w: InsertWorkflow, claim: LoneStartClaim, claimer: ClaimTerms | undefined): unknown[] {
  const params: unknown[] = [
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
    w.attributes ? JSON.stringify(w.attributes) : null,
    jsonOrNullParam(w.headers ?? null),
  ];
  if (claim === 'mine') {
    if (!claimer) throw new Error('lone start: a claim of its own needs the claim terms');
    params.push(claimer.engineId, claimer.ttlMs, claimer.graceMs);
  }
  return params;
}

/** The lone start's texts of one schema, one per claim kind, built once. */
export class LoneStarts {
  private readonly texts: Record<LoneStartClaim, string>;

  constructor(schema: string) {
    this.texts = { mine: loneStartSql(schema, 'mine'), free: loneStartSql(schema, 'free'), none: loneStartSql(schema, 'none') };
  }

  /** The statement for `w` (one that isLoneStart takes) and its parameters. */
  for(w: InsertWorkflow, claimer: ClaimTerms | undefined): { sql: string; params: unknown[] } {
    const claim = loneStartClaim(w, claimer);
    return { sql: this.texts[claim], params: loneStartParams(w, claim, claimer) };
  }
}
