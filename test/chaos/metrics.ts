// Failover and recovery times, from the claim audit and the fault records.
import type { HarnessDb } from './db.js';
import type { FaultRecord } from './faults.js';
import { LEDGER_SCHEMA } from './schema.js';
import { percentile } from './util.js';

export interface FailoverSample {
  kind: string;
  engineId: string;
  at: string;
  /** Running workflows whose claim the engine held at that instant. */
  held: number;
  takenOver: number;
  /** Workflows the engine still held and finished itself after SIGCONT (no takeover needed). */
  notTakenOver: number;
  p50Ms: number | null;
  maxMs: number | null;
  overlapsPostgresRestart: boolean;
}

/**
 * For a SIGKILL or SIGSTOP at `at` of engine X: the claims X held at that instant (last audited
 * holder change at or before it, of a workflow that had not ended by then: a terminal commit
 * leaves the claim row naming its last holder, docs/decisions/0011) and, for each, how long until
 * another epoch was acquired.
 */
async function failoverOf(db: HarnessDb, f: FaultRecord): Promise<number[] & { held?: number }> {
  const rows = await db.query<{ taken_ms: number | null }>(
    `WITH last AS (
       SELECT DISTINCT ON (workflow_id) workflow_id, new_epoch, new_engine FROM ${LEDGER_SCHEMA}.claim_audit
       WHERE at <= to_timestamp($1::float8 / 1000) ORDER BY workflow_id, id DESC)
     SELECT (SELECT (extract(epoch from min(a.at)) * 1000)::float8 FROM ${LEDGER_SCHEMA}.claim_audit a
             WHERE a.workflow_id = l.workflow_id AND a.at > to_timestamp($1::float8 / 1000)
               AND a.new_epoch > l.new_epoch AND a.new_engine IS NOT NULL) AS taken_ms
     FROM last l WHERE l.new_engine = $2
       AND NOT EXISTS (SELECT 1 FROM ${LEDGER_SCHEMA}.wf_audit e WHERE e.workflow_id = l.workflow_id
                         AND e.at <= to_timestamp($1::float8 / 1000) AND e.new_status IN ('completed', 'failed', 'cancelled', 'timed_out'))`,
    [f.at, f.engineId],
    300_000,
  );
  const out: number[] & { held?: number } = rows.filter((r) => r.taken_ms !== null).map((r) => r.taken_ms! - f.at);
  out.held = rows.length;
  return out;
}

export async function failoverTimes(db: HarnessDb, faults: FaultRecord[], boundMs: number) {
  const pg = faults.filter((f) => f.kind.startsWith('pg-') && !f.skipped);
  const samples: FailoverSample[] = [];
  const clean: number[] = [];
  const duringRestart: number[] = [];
  for (const f of faults) {
    if ((f.kind !== 'sigkill' && f.kind !== 'sigstop' && f.kind !== 'engine-crash') || f.skipped || !f.engineId) continue;
    const times = await failoverOf(db, f);
    // A takeover whose wait overlapped a PostgreSQL restart is not held to the bound.
    const overlaps = (t: number) => pg.some((p) => p.at < f.at + t && (p.endedAt ?? Infinity) > f.at);
    for (const t of times) (overlaps(t) ? duringRestart : clean).push(t);
    samples.push({
      kind: f.kind,
      engineId: f.engineId,
      at: new Date(f.at).toISOString(),
      held: times.held ?? 0,
      takenOver: times.length,
      notTakenOver: (times.held ?? 0) - times.length,
      p50Ms: percentile(times, 50),
      maxMs: times.length ? Math.max(...times) : null,
      overlapsPostgresRestart: times.some(overlaps),
    });
  }
  const stats = (xs: number[]) => ({
    n: xs.length,
    p50Ms: percentile(xs, 50),
    p95Ms: percentile(xs, 95),
    maxMs: xs.length ? Math.max(...xs) : null,
  });
  return {
    /** Takeovers not disturbed by a PostgreSQL restart, against TTL + takeover grace + one scan. */
    boundMs,
    ...stats(clean),
    overBound: clean.filter((t) => t > boundMs).length,
    duringPostgresRestart: stats(duringRestart),
    samples,
  };
}

/** After each PostgreSQL restart: how long until the first workflow advance committed again. */
export async function pgRecovery(
  db: HarnessDb,
  faults: FaultRecord[],
): Promise<Array<{ kind: string; unavailableMs: number; firstCommitAfterMs: number | null }>> {
  const out = [];
  for (const f of faults) {
    if (!f.kind.startsWith('pg-') || f.skipped || !f.endedAt) continue;
    const rows = await db.query<{ t: number | null }>(
      `SELECT (extract(epoch from min(at)) * 1000)::float8 AS t FROM ${LEDGER_SCHEMA}.wf_audit WHERE at >= to_timestamp($1::float8 / 1000)`,
      [f.endedAt],
    );
    const t = rows[0]?.t ?? null;
    out.push({ kind: f.kind, unavailableMs: f.endedAt - f.at, firstCommitAfterMs: t === null ? null : Math.round(t - f.endedAt) });
  }
  return out;
}
