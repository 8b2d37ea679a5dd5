// weft_step_progress: running steps' heartbeats (docs/long-steps.md). The engine that runs a step
// writes them in batches, one statement per flush for every step that beat meanwhile (upserts and
// the rows of ended steps removed); the load statement reads a run's rows with its history.
import { StepProgressEntity } from '../entities/step-progress.entity.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';
import { Payloads } from '../payloads.js';
import type { ClaimFence } from '../types.js';

/** One step's progress as written. */
export interface StepProgressWrite {
  workflowId: string;
  runNumber: number;
  seq: number;
  attempt: number;
  firstStartedAt: Date;
  /** Undefined: no heartbeat yet (the row keeps the first start for retry.maxElapsed). */
  details?: { value: unknown };
  /** The writer's claim at the epoch the run was launched under ('workflow-lease'). */
  fence?: ClaimFence;
}

/** The row of a step that ended, to remove. */
export interface StepProgressKey {
  workflowId: string;
  runNumber: number;
  seq: number;
}

/** An external completion's outcome (engine.completeStep / failStep). */
export type StepCompletion = { ok: true; value: unknown } | { ok: false; error: Record<string, unknown> };

/** One step's progress as loaded with its run. */
export interface StepProgressRow {
  seq: number;
  attempt: number;
  firstStartedAt: Date;
  details?: { value: unknown };
  completion?: StepCompletion;
}

/** What an external completion found. */
export interface CompletionOutcome {
  /** The workflow's status and run, or null when there is none. */
  status: string | null;
  runNumber: number | null;
  /** The step is recorded already. */
  recorded: boolean;
  /** This call's outcome was stored (false: one was before, or the attempt moved on). */
  taken: boolean;
}

function statements(schema: string) {
  const progress = qualify(schema, 'weft_step_progress');
  return {
    /**
     * Upserts, then removals, in one statement. An upsert is fenced as a commit is: a deposed
     * engine's late batch (a pause, an outage) writes nothing for a workflow whose claim (or the
     * global lease) moved on, whatever its attempt, since the new owner counts its attempts on
     * from what it loaded and may have loaded no row at all. The claim rows (or the lease row) are
     * locked FOR SHARE, claims in id order as renewal and takeovers lock them, so a takeover
     * waits for the batch and its load reads it. An upsert never lowers the attempt either. A row
     * whose workflow is gone (purged) is skipped rather than refused by the foreign key. Removals
     * are not fenced: a step's row goes once its record (or its cancel) is durable.
     */
    flush: `WITH gone AS (
               DELETE FROM ${progress} p USING unnest($8::varchar[], $9::int[], $10::int[]) AS d(workflow_id, run_number, seq)
                WHERE p.workflow_id = d.workflow_id AND p.run_number = d.run_number AND p.seq = d.seq),
             held AS MATERIALIZED (
               SELECT c.workflow_id FROM ${qualify(schema, 'weft_workflow_claims')} c
                 JOIN unnest($1::varchar[], $11::text[], $12::bigint[]) AS f(workflow_id, engine_id, epoch)
                   ON c.workflow_id = f.workflow_id AND c.engine_id = f.engine_id AND c.epoch = f.epoch
                ORDER BY c.workflow_id FOR SHARE OF c),
             lease_ok AS MATERIALIZED (
               SELECT l.holder, l.epoch FROM ${qualify(schema, 'weft_global_lease')} l
                WHERE l.id = 1 AND l.holder = $13::text AND l.epoch = $14::bigint FOR SHARE OF l)
             INSERT INTO ${progress} AS p (workflow_id, run_number, seq, attempt, first_started_at, has_details, details, beat_at)
             SELECT u.workflow_id, u.run_number, u.seq, u.attempt, u.first_started_at, u.has_details, u.details::json, now()
               FROM unnest($1::varchar[], $2::int[], $3::int[], $4::int[], $5::timestamptz[], $6::boolean[], $7::text[], $11::text[])
                    AS u(workflow_id, run_number, seq, attempt, first_started_at, has_details, details, claim_engine)
              WHERE EXISTS (SELECT 1 FROM ${qualify(schema, 'weft_workflows')} w WHERE w.id = u.workflow_id)
                AND (u.claim_engine IS NULL OR u.workflow_id IN (SELECT h.workflow_id FROM held h))
                AND ($13::text IS NULL OR EXISTS (SELECT 1 FROM lease_ok))
             ON CONFLICT (workflow_id, run_number, seq) DO UPDATE
                SET attempt = excluded.attempt,
                    has_details = p.has_details OR excluded.has_details,
                    details = CASE WHEN excluded.has_details THEN excluded.details ELSE p.details END,
                    beat_at = now()
              WHERE p.attempt <= excluded.attempt`,
    /**
     * An external completion, stored once: only while the workflow runs that run, the step is not
     * recorded, and no completion of this attempt is stored nor a later attempt began (a later
     * attempt's completion replaces a failed earlier one's).
     */
    complete: `WITH wf AS (SELECT status, run_number FROM ${qualify(schema, 'weft_workflows')} WHERE id = $1),
                    rec AS (SELECT 1 FROM ${qualify(schema, 'weft_operations')} o
                             WHERE o.workflow_id = $1 AND o.seq = $3 AND (SELECT run_number FROM wf) = $2),
                    ins AS (
                      INSERT INTO ${progress} AS p (workflow_id, run_number, seq, attempt, first_started_at, completion)
                      SELECT $1, $2, $3, $4, now(), $5::json FROM wf
                       WHERE wf.status = 'running' AND wf.run_number = $2 AND NOT EXISTS (SELECT 1 FROM rec)
                      ON CONFLICT (workflow_id, run_number, seq) DO UPDATE SET completion = excluded.completion, attempt = excluded.attempt
                       WHERE (p.completion IS NULL OR p.attempt < excluded.attempt) AND p.attempt <= excluded.attempt
                      RETURNING 1)
               SELECT (SELECT status FROM wf) AS status, (SELECT run_number FROM wf) AS run_number,
                      EXISTS (SELECT 1 FROM rec) AS recorded, EXISTS (SELECT 1 FROM ins) AS taken`,
    /** The completions stored for these waiting steps. */
    completions: `SELECT p.workflow_id, p.run_number, p.seq, p.attempt, p.completion FROM ${progress} p
                    JOIN unnest($1::varchar[], $2::int[], $3::int[]) AS k(workflow_id, run_number, seq)
                      ON p.workflow_id = k.workflow_id AND p.run_number = k.run_number AND p.seq = k.seq
                   WHERE p.completion IS NOT NULL`,
    /** The load statement's part: a run's rows, as JSON (workflow.repository.ts). */
    ofRun: (w: string) => `COALESCE((SELECT json_agg(json_build_object('seq', sp.seq, 'attempt', sp.attempt,
                 'first_started_at', sp.first_started_at, 'has_details', sp.has_details, 'details', sp.details,
                 'completion', sp.completion))
               FROM ${progress} sp WHERE sp.workflow_id = ${w}.id AND sp.run_number = ${w}.run_number), '[]'::json)`,
  };
}

/** weft_step_progress. */
export class StepProgressRepository extends WeftRepository<StepProgressEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal Built by the engine. */
  constructor(
    db: SqlAccess,
    schema: string,
    private readonly payloads: Payloads = new Payloads(),
  ) {
    super(db, StepProgressEntity, 'weft_step_progress');
    this.q = statements(schema);
  }

  /** @internal Stores an external completion of the step at (workflowId, runNumber, seq), attempt `attempt`, once. */
  async complete(key: StepProgressKey, attempt: number, completion: StepCompletion): Promise<CompletionOutcome> {
    const [r] = await this.db.query<{ status: string | null; run_number: number | null; recorded: boolean; taken: boolean }>(
      this.q.complete,
      [key.workflowId, key.runNumber, key.seq, attempt, JSON.stringify(await encodeCompletion(this.payloads, completion))],
    );
    return { status: r.status, runNumber: r.run_number, recorded: r.recorded, taken: r.taken };
  }

  /** @internal The completions stored for these steps. */
  async completions(keys: StepProgressKey[]): Promise<Array<StepProgressKey & { attempt: number; completion: StepCompletion }>> {
    const rows = await this.db.query<{ workflow_id: string; run_number: number; seq: number; attempt: number; completion: StepCompletion }>(
      this.q.completions,
      [keys.map((k) => k.workflowId), keys.map((k) => k.runNumber), keys.map((k) => k.seq)],
    );
    return Promise.all(
      rows.map(async (r) => ({
        workflowId: r.workflow_id,
        runNumber: r.run_number,
        seq: r.seq,
        attempt: r.attempt,
        completion: await decodeCompletion(this.payloads, r.completion),
      })),
    );
  }

  /** @internal Writes `saves` and removes `removes` in one statement; `leaseFence`: the writer's global lease ('lease'). */
  async flush(saves: StepProgressWrite[], removes: StepProgressKey[], leaseFence?: ClaimFence): Promise<void> {
    const details = await Promise.all(
      saves.map(async (s) => (s.details === undefined ? null : JSON.stringify((await this.payloads.encode(s.details.value)) ?? null))),
    );
    await this.db.query(this.q.flush, [
      saves.map((s) => s.workflowId),
      saves.map((s) => s.runNumber),
      saves.map((s) => s.seq),
      saves.map((s) => s.attempt),
      saves.map((s) => s.firstStartedAt),
      saves.map((s) => s.details !== undefined),
      details,
      removes.map((r) => r.workflowId),
      removes.map((r) => r.runNumber),
      removes.map((r) => r.seq),
      saves.map((s) => s.fence?.engineId ?? null),
      saves.map((s) => s.fence?.epoch ?? null),
      leaseFence?.engineId ?? null,
      leaseFence?.epoch ?? null,
    ]);
  }
}

/** The load statement's text for a run's rows (`w` is the workflow row's alias). */
export function stepProgressOfRun(schema: string, w: string): string {
  return statements(schema).ofRun(w);
}

/** An external completion's stored form: its value encoded (a failure is an error: not a payload). */
async function encodeCompletion(payloads: Payloads, c: StepCompletion): Promise<StepCompletion> {
  return c.ok ? { ok: true, value: await payloads.encode(c.value) } : c;
}

async function decodeCompletion(payloads: Payloads, c: StepCompletion): Promise<StepCompletion> {
  return c.ok ? { ok: true, value: await payloads.decode(c.value) } : c;
}

/** A run's loaded rows with their details and completions decoded, in place. */
export async function decodeStepProgress(payloads: Payloads, rows: StepProgressRow[]): Promise<StepProgressRow[]> {
  for (const r of rows) {
    if (r.details) r.details = { value: await payloads.decode(r.details.value) };
    if (r.completion) r.completion = await decodeCompletion(payloads, r.completion);
  }
  return rows;
}

/** A run's rows as the load statement gives them. */
export function stepProgressFrom(json: unknown): StepProgressRow[] {
  type Row = {
    seq: number;
    attempt: number;
    first_started_at: string;
    has_details: boolean;
    details: unknown;
    completion: StepCompletion | null;
  };
  return ((json as Row[]) ?? []).map((r) => ({
    seq: r.seq,
    attempt: r.attempt,
    firstStartedAt: new Date(r.first_started_at),
    details: r.has_details ? { value: r.details } : undefined,
    completion: r.completion ?? undefined,
  }));
}
