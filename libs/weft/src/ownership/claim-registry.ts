import type { SqlAccess } from '../storage/repositories/weft-repository.js';
import { ClaimRepository, ClaimTerms, type ClaimView } from '../storage/repositories/claim.repository.js';
import type { Queryable } from '../storage/sql-client.js';
import type { OwnershipConfig } from './config.js';

export type ClaimOutcome = 'acquired' | 'takeover' | 'lost_race' | 'deposed' | 'backoff_skipped';

/** Optional metric hooks (WeftMetrics implements them). */
export interface ClaimMetrics {
  claimAttempt?(outcome: ClaimOutcome): void;
  claimsActive?(n: number): void;
  renewalFailure?(): void;
  renewalPassDuration?(seconds: number): void;
}

export type AcquireResult =
  | { ok: true; epoch: string }
  | { ok: false; reason: 'held'; heldBy: string | null; epoch: string }
  | { ok: false; reason: 'lost_race' | 'backoff' };

export interface ClaimRegistryDependencies {
  sql: SqlAccess;
  schema: string;
  engineId: string;
  config: OwnershipConfig;
  metrics?: ClaimMetrics;
  /** Renewal's own connection, so it never queues behind the pool (default: `sql`). */
  renewSql?: Queryable;
}

/**
 * This engine's per-workflow claims: the database side of the claim protocol (docs/ownership.md). Methods return
 * discriminated results and never throw on a lost compare-and-swap.
 */
export class WorkflowClaimRegistry {
  /** workflowId → epoch this engine holds. */
  readonly held = new Map<string, string>();
  /**
   * Local monotonic deadline of each claim: TTL after the statement that last set its expiry
   * was SENT. Past it, this engine must assume the claim may have been taken over.
   */
  private readonly validUntil = new Map<string, number>();
  private readonly backoff = new Map<string, { until: number; level: number }>();
  /** Claims this engine let go of whose release statement failed: workflowId → epoch. */
  private readonly unreleased = new Map<string, string>();
  private readonly claims: ClaimRepository;
  private readonly renewSql: Queryable;
  private readonly metrics: ClaimMetrics;
  readonly engineId: string;
  readonly config: OwnershipConfig;
  /** @internal This engine's claim terms, fixed for its life (starts take claims with them too). */
  readonly terms: ClaimTerms;
  renewalFailures = 0;

  /** @internal Built by the engine; inject it from WeftModule. */
  constructor(deps: ClaimRegistryDependencies) {
    this.claims = new ClaimRepository(deps.sql, deps.schema);
    this.renewSql = deps.renewSql ?? deps.sql;
    this.metrics = deps.metrics ?? {};
    this.engineId = deps.engineId;
    this.config = deps.config;
    this.terms = { engineId: deps.engineId, ttlMs: deps.config.ttlMs, graceMs: deps.config.graceMs };
  }

  /** Held, and not possibly expired by this engine's own clock (e.g. after a long pause). */
  isValid(workflowId: string): boolean {
    return this.held.has(workflowId) && (this.validUntil.get(workflowId) ?? 0) > performance.now();
  }

  epochOf(workflowId: string): string | undefined {
    return this.held.get(workflowId);
  }

  read(workflowId: string): Promise<ClaimView | null> {
    return this.claims.read(workflowId, this.config.graceMs);
  }

  /** Records a claim acquired inside another statement (start). */
  adopt(workflowId: string, epoch: string, sentAt = performance.now()): void {
    this.held.set(workflowId, epoch);
    this.validUntil.set(workflowId, sentAt + this.config.ttlMs);
    this.metrics.claimAttempt?.('acquired');
    this.metrics.claimsActive?.(this.held.size);
  }

  /** Acquire for a workflow this engine just created, before its code runs. */
  async acquireNew(workflowId: string, version: number): Promise<boolean> {
    const sentAt = performance.now();
    const epoch = await this.claims.acquireNew(workflowId, version, this.terms);
    if (epoch === null) {
      this.metrics.claimAttempt?.('lost_race');
      return false;
    }
    this.adopt(workflowId, epoch, sentAt);
    return true;
  }

  /** Standalone acquire (recovery, resume, delayed start): only if nobody holds it or its holder expired. */
  async acquire(workflowId: string, opts: { explicit?: boolean } = {}): Promise<AcquireResult> {
    // Backoff is for background scans; an operator's explicit resume is not turned away by it.
    if (!opts.explicit && this.inBackoff(workflowId)) {
      this.metrics.claimAttempt?.('backoff_skipped');
      return { ok: false, reason: 'backoff' };
    }
    await this.claims.ensureRow(workflowId);
    const view = await this.read(workflowId);
    if (!view) return { ok: false, reason: 'lost_race' };
    if (view.engineId !== null && !view.expired && !view.ended)
      return { ok: false, reason: 'held', heldBy: view.engineId, epoch: view.epoch };
    const sentAt = performance.now();
    const epoch = await this.claims.acquire(workflowId, view, this.terms);
    if (epoch === null) {
      this.metrics.claimAttempt?.('lost_race');
      return { ok: false, reason: 'lost_race' };
    }
    this.adopt(workflowId, epoch, sentAt);
    return { ok: true, epoch };
  }

  /**
   * Recovery: claims those of `workflowIds` that are running and free (or whose holder expired
   * past the grace) in one statement; returns the ones taken. Ids in backoff are left alone.
   */
  async acquireMany(workflowIds: string[]): Promise<string[]> {
    const wanted = workflowIds.filter((id) => !this.inBackoff(id));
    if (wanted.length === 0) return [];
    const sentAt = performance.now();
    const taken = await this.claims.acquireMany(wanted, this.terms);
    for (const r of taken) {
      this.held.set(r.workflowId, r.epoch);
      this.validUntil.set(r.workflowId, sentAt + this.config.ttlMs);
      this.metrics.claimAttempt?.(r.previous ? 'takeover' : 'acquired');
    }
    if (taken.length) this.metrics.claimsActive?.(this.held.size);
    return taken.map((r) => r.workflowId);
  }

  /** Takeover of an expired holder, exactly as read. */
  async takeover(workflowId: string, heldBy: string, epoch: string): Promise<AcquireResult> {
    if (this.inBackoff(workflowId)) {
      this.metrics.claimAttempt?.('backoff_skipped');
      return { ok: false, reason: 'backoff' };
    }
    const sentAt = performance.now();
    const taken = await this.claims.takeover(workflowId, { epoch, engineId: heldBy }, this.terms);
    if (taken === null) {
      this.metrics.claimAttempt?.('lost_race');
      return { ok: false, reason: 'lost_race' };
    }
    this.held.set(workflowId, taken);
    this.validUntil.set(workflowId, sentAt + this.config.ttlMs);
    this.metrics.claimAttempt?.('takeover');
    this.metrics.claimsActive?.(this.held.size);
    return { ok: true, epoch: taken };
  }

  /** Reclaim scan: takes over up to `limit` running workflows of `types` with no live holder. */
  async reclaim(types: string[], limit: number): Promise<Array<{ workflowId: string; epoch: string; previous: string | null }>> {
    if (limit <= 0 || types.length === 0) return [];
    const now = Date.now();
    const skip = [...this.backoff].filter(([, b]) => b.until > now).map(([id]) => id);
    const sentAt = performance.now();
    const taken = await this.claims.reclaim(types, skip, limit, this.terms);
    for (const r of taken) {
      this.held.set(r.workflowId, r.epoch);
      this.validUntil.set(r.workflowId, sentAt + this.config.ttlMs);
      this.metrics.claimAttempt?.(r.previous ? 'takeover' : 'acquired');
    }
    if (taken.length) this.metrics.claimsActive?.(this.held.size);
    return taken;
  }

  /** ONE statement for every held claim. Returns the ids that were lost (and forgets them). */
  async renewAll(): Promise<string[]> {
    if (this.held.size === 0) return [];
    const ids = [...this.held.keys()];
    const epochs = ids.map((id) => this.held.get(id)!);
    const t0 = performance.now();
    const failed = await this.claims.renewAll(this.renewSql, this.engineId, { ids, epochs }, this.config.ttlMs);
    this.metrics.renewalPassDuration?.((performance.now() - t0) / 1000);
    const validUntil = t0 + this.config.ttlMs;
    // A claim re-acquired at another epoch while the statement ran is not lost.
    const unrenewed: string[] = [];
    const unrenewedEpochs: string[] = [];
    ids.forEach((id, i) => {
      if (!failed.has(id)) {
        if (this.held.get(id) === epochs[i]) this.validUntil.set(id, validUntil);
      } else if (this.held.get(id) === epochs[i]) {
        unrenewed.push(id);
        unrenewedEpochs.push(epochs[i]);
      }
    });
    if (unrenewed.length === 0) return [];
    // A suspend commit releases the claim in its own statement (a terminal one leaves the claim row
    // as it is, so its renewal succeeds: docs/decisions/0011), and its outcome may
    // reach us after this renewal's: such a claim was let go here, not lost (no warning, no
    // backoff, the run is not stopped; its commit's outcome forgets it too).
    const released = await this.claims.releasedAt(this.renewSql, { ids: unrenewed, epochs: unrenewedEpochs });
    const lost: string[] = [];
    unrenewed.forEach((id, i) => {
      if (this.held.get(id) !== unrenewedEpochs[i]) return;
      if (released.has(id)) this.forget(id);
      else lost.push(id);
    });
    for (const id of lost) this.lose(id);
    return lost;
  }

  /** Of claims no longer held, those an external transition rotated (ClaimRepository.endedExternally). */
  endedExternally(workflowIds: string[]): Promise<Set<string>> {
    return this.claims.endedExternally(workflowIds);
  }

  /** Forgets a claim that was lost (failed renewal or refused fence) and backs off from it. */
  lose(workflowId: string): void {
    this.validUntil.delete(workflowId);
    if (!this.held.delete(workflowId)) return;
    this.renewalFailures++;
    this.metrics.renewalFailure?.();
    this.metrics.claimAttempt?.('deposed');
    this.metrics.claimsActive?.(this.held.size);
    const prev = this.backoff.get(workflowId);
    const level = prev ? prev.level + 1 : 0;
    const delay = Math.min(this.config.renewMs * 2 ** level, 4 * this.config.ttlMs);
    this.backoff.set(workflowId, { until: Date.now() + delay, level });
  }

  /** Forgets a claim released by a terminal or suspend commit. */
  forget(workflowId: string): void {
    this.validUntil.delete(workflowId);
    if (this.held.delete(workflowId)) this.metrics.claimsActive?.(this.held.size);
  }

  async release(workflowId: string): Promise<boolean> {
    const epoch = this.held.get(workflowId);
    if (epoch === undefined) return false;
    this.forget(workflowId);
    try {
      await this.claims.release(workflowId, this.engineId, epoch);
    } catch (err) {
      // The database is away: the row still names this engine. Released on a later pass (or at
      // dispose), not left held until it expires, which would delay the next holder by a TTL.
      this.unreleased.set(workflowId, epoch);
      throw err;
    }
    return true;
  }

  /** Releases that failed earlier, tried again (each maintenance pass); true: none left. */
  async retryReleases(): Promise<boolean> {
    if (this.unreleased.size === 0) return true;
    const ids = [...this.unreleased.keys()];
    const epochs = ids.map((id) => this.unreleased.get(id)!);
    await this.claims.releaseAll(this.engineId, { ids, epochs });
    // Released, or no longer this engine's at that epoch (taken over, or re-acquired since): done either way.
    ids.forEach((id, i) => this.unreleased.get(id) === epochs[i] && this.unreleased.delete(id));
    return this.unreleased.size === 0;
  }

  /** Best effort at shutdown: releases everything held in one statement. */
  async releaseAll(): Promise<{ released: number; failed: number }> {
    const pending = [...this.unreleased];
    this.unreleased.clear();
    const ids = [...this.held.keys(), ...pending.map(([id]) => id)];
    if (ids.length === 0) return { released: 0, failed: 0 };
    const epochs = [...this.held.values(), ...pending.map(([, epoch]) => epoch)];
    this.held.clear();
    this.validUntil.clear();
    this.metrics.claimsActive?.(0);
    try {
      const released = await this.claims.releaseAll(this.engineId, { ids, epochs });
      return { released, failed: ids.length - released };
    } catch {
      return { released: 0, failed: ids.length };
    }
  }

  /** A claim row with no holder, so reclaim scans see the workflow. */
  async ensureRow(workflowId: string): Promise<void> {
    await this.claims.ensureRow(workflowId);
  }

  async backfill(): Promise<void> {
    await this.claims.backfill();
  }

  private inBackoff(workflowId: string): boolean {
    const b = this.backoff.get(workflowId);
    if (!b) return false;
    if (b.until > Date.now()) return true;
    return false;
  }
}
