// weft_workflow_claims: one fenced, renewable claim per workflow (docs/ownership.md). Every
// transition is a compare-and-swap; epochs are always `epoch + 1` of the row as read, and expiry
// is judged by the database clock. The claim taken with a start or a restart is written by their
// statements (workflow.repository.ts); the advance's fence is part of workflow-advance.ts.
import { WorkflowClaimEntity } from '../entities/ownership.entities.js';
import type { Queryable } from '../sql-client.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';

/**
 * Whether the claim row `cl` may be given to a new holder: nobody holds it, its holder expired past
 * the grace (`grace`, a parameter in ms), or it is not the fence of its workflow. A terminal commit
 * clears the fence and leaves the claim row as it is (docs/decisions/0011), so the holder a row
 * still names after its run ended holds nothing. A held claim is always its workflow's fence: every
 * handover sets both in one statement (docs/decisions/0008).
 */
export function claimFreeSql(schema: string, cl: string, grace: string): string {
  return `(${cl}.engine_id IS NULL OR ${cl}.expires_at + ${grace} * interval '1 millisecond' < clock_timestamp()
           OR ${notFenceSql(schema, cl)})`;
}

/**
 * The claim row `cl` is not its workflow's fence (no row, or another epoch, or none). A probe by
 * key: as NOT EXISTS, a generic plan hashed all of weft_workflows for it (hot-path-plans.spec.ts).
 */
function notFenceSql(schema: string, cl: string): string {
  return `(SELECT fw.fence_epoch FROM ${qualify(schema, 'weft_workflows')} fw WHERE fw.id = ${cl}.workflow_id) IS DISTINCT FROM ${cl}.epoch`;
}

function statements(schema: string) {
  const claims = qualify(schema, 'weft_workflow_claims');
  const wf = qualify(schema, 'weft_workflows');
  // The workflow row's fence_epoch is its claim's epoch while the claim has a holder, else null
  // (docs/decisions/0008). Every statement that hands a claim to a new holder sets it in the
  // same statement (after the claim row: claim rows are locked first everywhere), which is what
  // fences the previous holder's commits (docs/decisions/0008). It waits for a commit of the
  // previous holder in flight, so the new holder's load sees it.
  const FOLLOW = `fenced AS (UPDATE ${wf} w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id)`;
  // The candidates (cand) taken at the epoch and holder they were read with: $1 the engine, $3 the TTL.
  const TAKE = `c AS (
        UPDATE ${claims} c SET epoch = c.epoch + 1, engine_id = $1, expires_at = clock_timestamp() + $3 * interval '1 millisecond',
               claimed_at = clock_timestamp(), version = c.version + 1
        FROM cand
        WHERE c.workflow_id = cand.workflow_id AND c.epoch = cand.epoch AND c.engine_id IS NOT DISTINCT FROM cand.engine_id
        RETURNING c.workflow_id, c.epoch, cand.engine_id AS previous
      ),
      ${FOLLOW}`;
  // A released claim has no holder: its row takes no fenced write until the next handover.
  const UNFENCE = `UPDATE ${wf} w SET fence_epoch = NULL FROM c WHERE w.id = c.workflow_id AND w.fence_epoch = c.epoch`;
  return {
    read: `SELECT c.workflow_id, c.epoch::text AS epoch, c.engine_id, c.expires_at, c.claimed_at,
                  EXTRACT(EPOCH FROM (c.expires_at - clock_timestamp())) * 1000 AS expires_in_ms,
                  (c.engine_id IS NOT NULL AND c.expires_at + $2 * interval '1 millisecond' < clock_timestamp()) AS expired,
                  (c.engine_id IS NOT NULL AND ${notFenceSql(schema, 'c')}) AS ended
           FROM ${claims} c WHERE c.workflow_id = $1`,
    ensureRow: `INSERT INTO ${claims} (workflow_id) VALUES ($1) ON CONFLICT (workflow_id) DO NOTHING`,
    /**
     * Standalone acquire (recovery, resume, delayed-start fire): at the epoch and holder as read,
     * when nobody holds it or its holder ($5) expired past the grace ($6): a holder that died
     * between its claim and the write it claimed for must not strand the workflow.
     */
    acquire: `WITH c AS (UPDATE ${claims} cl SET epoch = cl.epoch + 1, engine_id = $2, expires_at = clock_timestamp() + $4 * interval '1 millisecond',
                     claimed_at = clock_timestamp(), version = cl.version + 1
              WHERE cl.workflow_id = $1 AND cl.epoch = $3::bigint AND cl.engine_id IS NOT DISTINCT FROM $5::text
                AND ${claimFreeSql(schema, 'cl', '$6')}
              RETURNING cl.workflow_id, cl.epoch),
        ${FOLLOW}
        SELECT epoch::text AS epoch FROM c`,
    /**
     * Acquire for a workflow this engine just created: one round trip. A first-ever row starts
     * at epoch 1 (0, "never held", + 1); an existing row (an earlier run of the id) increments.
     */
    acquireNew: `WITH c AS (
                   INSERT INTO ${claims} AS c (workflow_id, epoch, engine_id, expires_at, claimed_at)
                   VALUES ($1, 1, $2, clock_timestamp() + $3 * interval '1 millisecond', clock_timestamp())
                   ON CONFLICT (workflow_id) DO UPDATE SET epoch = c.epoch + 1, engine_id = EXCLUDED.engine_id,
                     expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = c.version + 1
                   -- free, or left by an engine that died (expired past the grace), e.g. on an earlier run of the id
                   WHERE (c.engine_id IS NULL OR c.expires_at + $5 * interval '1 millisecond' < clock_timestamp())
                     -- an existing row (backfilled): only while nobody advanced the workflow since our insert
                     AND EXISTS (SELECT 1 FROM ${wf} w WHERE w.id = $1 AND w.version = $4 AND w.status = 'running' FOR SHARE)
                   RETURNING workflow_id, epoch),
                 ${FOLLOW}
                 SELECT epoch::text AS epoch FROM c`,
    /** Takeover: holder and epoch exactly as read, and expired by the database clock plus grace. */
    takeover: `WITH c AS (UPDATE ${claims} SET epoch = epoch + 1, engine_id = $2, expires_at = clock_timestamp() + $5 * interval '1 millisecond',
                      claimed_at = clock_timestamp(), version = version + 1
               WHERE workflow_id = $1 AND engine_id = $3 AND epoch = $4::bigint
                 AND expires_at + $6 * interval '1 millisecond' < clock_timestamp()
               RETURNING workflow_id, epoch),
        ${FOLLOW}
        SELECT epoch::text AS epoch FROM c`,
    /**
     * ONE statement renews every claim this engine holds and returns only the ones it could
     * not renew (lost), so a pass over 100k claims sends the ids once and gets ~nothing back.
     */
    renewAll: `WITH h AS (SELECT * FROM unnest($2::text[], $3::bigint[]) AS h(id, epoch)),
               -- Locked in id order, as the advance's fence locks them: a renewal and a batch
               -- advance over the same claims cannot deadlock.
               lk AS (
                 SELECT c.ctid AS tid FROM ${claims} c JOIN h ON c.workflow_id = h.id AND c.epoch = h.epoch
                 WHERE c.engine_id = $1 ORDER BY c.workflow_id FOR NO KEY UPDATE OF c),
               -- Each row found again by the address it was locked at (our lock keeps it there):
               -- a second search of the key per claim was a third of a 100k-claim pass.
               upd AS (
                 UPDATE ${claims} c SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
                 FROM lk WHERE c.ctid = lk.tid
                 RETURNING c.workflow_id)
               SELECT h.id AS workflow_id FROM h LEFT JOIN upd ON upd.workflow_id = h.id WHERE upd.workflow_id IS NULL`,
    /**
     * Of claims a renewal could not renew, those released at the epoch this engine held them:
     * only the holder releases at its epoch (the advance's release, release(), releaseAll()); a
     * takeover or a rotation moves the epoch. A statement of its own, after the renewal: a
     * release that committed while the renewal waited for the row is in this snapshot.
     */
    releasedAt: `SELECT c.workflow_id FROM ${claims} c JOIN unnest($1::text[], $2::bigint[]) AS h(id, epoch)
                   ON c.workflow_id = h.id AND c.epoch = h.epoch
                 WHERE c.engine_id IS NULL`,
    /**
     * Of claims this engine no longer holds, those whose workflow an external transition took
     * away (cancelled, suspended or timed out by any engine, or purged since): rotated, not lost.
     */
    endedExternally: `SELECT h.id AS workflow_id FROM unnest($1::text[]) AS h(id) LEFT JOIN ${wf} w ON w.id = h.id
                      WHERE w.id IS NULL OR w.status IN ('cancelled', 'suspended', 'timed_out')`,
    release: `WITH c AS (UPDATE ${claims} SET engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = version + 1
                         WHERE workflow_id = $1 AND engine_id = $2 AND epoch = $3::bigint RETURNING workflow_id, epoch)
              ${UNFENCE}`,
    releaseAll: `WITH c AS (UPDATE ${claims} c SET engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = c.version + 1
                   FROM unnest($2::text[], $3::bigint[]) AS h(id, epoch)
                   WHERE c.workflow_id = h.id AND c.engine_id = $1 AND c.epoch = h.epoch
                   RETURNING c.workflow_id, c.epoch),
                 unfenced AS (UPDATE ${wf} w SET fence_epoch = NULL FROM c WHERE w.id = c.workflow_id AND w.fence_epoch = c.epoch)
                 SELECT workflow_id FROM c`,
    /**
     * Recovery, a page at a time: those of the given ids ($2) that are running and whose claim is
     * free or expired past the grace, locked in id order (SKIP LOCKED: another engine's scan or
     * recovery has them), then taken as the reclaim scan takes them.
     */
    acquireMany: `
      WITH cand AS (
        SELECT c.workflow_id, c.engine_id, c.epoch FROM ${claims} c JOIN ${wf} w ON w.id = c.workflow_id
        WHERE c.workflow_id = ANY($2::text[]) AND w.id = ANY($2::text[]) AND w.status = 'running'
          AND (c.engine_id IS NULL OR c.expires_at < clock_timestamp() - $4 * interval '1 millisecond')
        ORDER BY c.workflow_id
        FOR UPDATE OF c SKIP LOCKED
        FOR SHARE OF w SKIP LOCKED
      ),
      ${TAKE}
      SELECT workflow_id, epoch::text AS epoch, previous FROM c`,
    /**
     * Reclaim scan and takeover in one statement: running workflows of the given types whose
     * holder is absent or expired, bounded and locked with SKIP LOCKED so survivors split them.
     */
    reclaim: `
      WITH cand AS (
        SELECT c.workflow_id, c.engine_id, c.epoch FROM ${claims} c JOIN ${wf} w ON w.id = c.workflow_id
        WHERE w.status = 'running' AND w.type = ANY($2::text[])
          AND (c.engine_id IS NULL OR c.expires_at < clock_timestamp() - $4 * interval '1 millisecond')
          AND NOT (c.workflow_id = ANY($5::text[]))
        ORDER BY random()
        LIMIT $6
        -- Locking w too makes a row re-check see a workflow that ended meanwhile (and skip it).
        FOR UPDATE OF c SKIP LOCKED
        FOR SHARE OF w SKIP LOCKED
      ),
      ${TAKE}
      SELECT workflow_id, epoch::text AS epoch, previous FROM c`,
    /**
     * One row per engine holding claims, for operators (the dashboard's engines view). A renewal
     * sets expires_at = now + TTL ($1), so the latest one was at max(expires_at) - TTL. Held
     * claims are reached through the running workflows (the claims table has a row for every
     * workflow ever started, and no index by engine): a claim is only held while its workflow
     * runs, but for the moment a delayed start's or a resume's claim precedes its status commit.
     */
    engines: `SELECT engine_id, count(*)::int AS claims,
                     (count(*) FILTER (WHERE expires_at < clock_timestamp()))::int AS expired,
                     max(expires_at) AS latest_expiry,
                     EXTRACT(EPOCH FROM (max(expires_at) - clock_timestamp())) * 1000 AS expires_in_ms,
                     EXTRACT(EPOCH FROM (clock_timestamp() - max(expires_at))) * 1000 + $1 AS renewal_age_ms
              FROM ${claims} c JOIN ${wf} w ON w.id = c.workflow_id AND w.status = 'running'
              WHERE c.engine_id IS NOT NULL
              GROUP BY engine_id ORDER BY engine_id LIMIT $2`,
    /** Running workflows that never got a claim row (e.g. a crash between statements). */
    backfill: `INSERT INTO ${claims} (workflow_id)
               SELECT w.id FROM ${wf} w WHERE w.status = 'running'
                 AND NOT EXISTS (SELECT 1 FROM ${claims} c WHERE c.workflow_id = w.id)
               ON CONFLICT (workflow_id) DO NOTHING`,
  };
}

/** A workflow's claim row as the database sees it. */
export interface ClaimView {
  workflowId: string;
  epoch: string;
  engineId: string | null;
  expiresAt: Date | null;
  claimedAt: Date | null;
  /** Time left by the database clock (negative once past); null when no expiry is set. */
  expiresInMs: number | null;
  /** Expired by the database clock plus the grace asked for. */
  expired: boolean;
  /**
   * It names a holder but is not its workflow's fence: the run it was held for ended (a terminal
   * commit leaves the claim row as it is, docs/decisions/0011). Nobody holds it.
   */
  ended: boolean;
}

/** The claims one engine holds, as `engines()` sums them up. */
export interface EngineClaims {
  engineId: string;
  claims: number;
  /** Past their expiry by the database clock: the engine stopped renewing them. */
  expiredClaims: number;
  latestExpiry: Date;
  /** Until the latest expiry, by the database clock (negative once past). */
  expiresInMs: number;
  lastRenewalAgeMs: number;
}

/** Who takes a claim, for how long, and the grace past an expiry before a takeover. */
export interface ClaimTerms {
  engineId: string;
  ttlMs: number;
  graceMs: number;
}

export class ClaimRepository extends WeftRepository<WorkflowClaimEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(db: SqlAccess, schema: string) {
    super(db, WorkflowClaimEntity, 'weft_workflow_claims');
    this.q = statements(schema);
  }

  async read(workflowId: string, graceMs: number): Promise<ClaimView | null> {
    const [r] = await this.db.query<Record<string, unknown>>(this.q.read, [workflowId, graceMs]);
    if (!r) return null;
    return {
      workflowId,
      epoch: r.epoch as string,
      engineId: (r.engine_id as string | null) ?? null,
      expiresAt: (r.expires_at as Date | null) ?? null,
      claimedAt: (r.claimed_at as Date | null) ?? null,
      expiresInMs: r.expires_in_ms === null ? null : Math.round(Number(r.expires_in_ms)),
      expired: r.expired as boolean,
      ended: r.ended as boolean,
    };
  }

  /** A claim row with no holder, so reclaim scans see the workflow. */
  async ensureRow(workflowId: string): Promise<void> {
    await this.db.query(this.q.ensureRow, [workflowId]);
  }

  /** At the epoch and holder as read; the new epoch, or null on a lost race. */
  async acquire(workflowId: string, seen: { epoch: string; engineId: string | null }, t: ClaimTerms): Promise<string | null> {
    const rows = await this.db.query<{ epoch: string }>(this.q.acquire, [
      workflowId,
      t.engineId,
      seen.epoch,
      t.ttlMs,
      seen.engineId,
      t.graceMs,
    ]);
    return rows[0]?.epoch ?? null;
  }

  /** For a workflow just created at `version`; the new epoch, or null. */
  async acquireNew(workflowId: string, version: number, t: ClaimTerms): Promise<string | null> {
    const rows = await this.db.query<{ epoch: string }>(this.q.acquireNew, [workflowId, t.engineId, t.ttlMs, version, t.graceMs]);
    return rows[0]?.epoch ?? null;
  }

  /** From `holder` at `epoch`, expired; the new epoch, or null. */
  async takeover(workflowId: string, seen: { epoch: string; engineId: string }, t: ClaimTerms): Promise<string | null> {
    const rows = await this.db.query<{ epoch: string }>(this.q.takeover, [
      workflowId,
      t.engineId,
      seen.engineId,
      seen.epoch,
      t.ttlMs,
      t.graceMs,
    ]);
    return rows[0]?.epoch ?? null;
  }

  /** Scan and take over up to `limit` running workflows of `types` (not in `skip`) whose holder is absent or expired. */
  async reclaim(types: string[], skip: string[], limit: number, t: ClaimTerms) {
    const rows = await this.db.query<{ workflow_id: string; epoch: string; previous: string | null }>(this.q.reclaim, [
      t.engineId,
      types,
      t.ttlMs,
      t.graceMs,
      skip,
      limit,
    ]);
    return rows.map((r) => ({ workflowId: r.workflow_id, epoch: r.epoch, previous: r.previous }));
  }

  /** Takes those of `ids` that are running and free or expired (recovery); see the statement. */
  async acquireMany(ids: string[], t: ClaimTerms) {
    const rows = await this.db.query<{ workflow_id: string; epoch: string; previous: string | null }>(this.q.acquireMany, [
      t.engineId,
      ids,
      t.ttlMs,
      t.graceMs,
    ]);
    return rows.map((r) => ({ workflowId: r.workflow_id, epoch: r.epoch, previous: r.previous }));
  }

  /** Renews every listed claim in one statement, on `via` (renewal's own connection); returns the ids it could not renew. */
  async renewAll(via: Queryable, engineId: string, held: { ids: string[]; epochs: string[] }, ttlMs: number): Promise<Set<string>> {
    const rows = await via.query<{ workflow_id: string }>(this.q.renewAll, [engineId, held.ids, held.epochs, ttlMs]);
    return new Set(rows.map((r) => r.workflow_id));
  }

  /** Those of the claims (ids with the epochs held) that are free at that epoch: released by their holder. */
  async releasedAt(via: Queryable, held: { ids: string[]; epochs: string[] }): Promise<Set<string>> {
    const rows = await via.query<{ workflow_id: string }>(this.q.releasedAt, [held.ids, held.epochs]);
    return new Set(rows.map((r) => r.workflow_id));
  }

  /** Those of `ids` an external transition (cancel, suspend, timeout, purge) took from their holder. */
  async endedExternally(ids: string[]): Promise<Set<string>> {
    const rows = await this.db.query<{ workflow_id: string }>(this.q.endedExternally, [ids]);
    return new Set(rows.map((r) => r.workflow_id));
  }

  async release(workflowId: string, engineId: string, epoch: string): Promise<void> {
    await this.db.query(this.q.release, [workflowId, engineId, epoch]);
  }

  /** Returns how many were released. */
  async releaseAll(engineId: string, held: { ids: string[]; epochs: string[] }): Promise<number> {
    return (await this.db.query(this.q.releaseAll, [engineId, held.ids, held.epochs])).length;
  }

  /** Engines holding claims, by engine id, at most `limit`; `ttlMs` dates their last renewal. */
  async engines(ttlMs: number, limit: number): Promise<EngineClaims[]> {
    const rows = await this.db.query<Record<string, unknown>>(this.q.engines, [ttlMs, limit]);
    return rows.map((r) => ({
      engineId: r.engine_id as string,
      claims: r.claims as number,
      expiredClaims: r.expired as number,
      latestExpiry: r.latest_expiry as Date,
      expiresInMs: Math.round(Number(r.expires_in_ms)),
      lastRenewalAgeMs: Math.round(Number(r.renewal_age_ms)),
    }));
  }

  /** Running workflows that never got a claim row (e.g. a crash between statements) get one. */
  async backfill(): Promise<void> {
    await this.db.query(this.q.backfill);
  }
}
