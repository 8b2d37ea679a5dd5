import { EngineLeaseNotHeldError } from '../common/errors.js';
import type { SqlClient } from '../storage/sql-client.js';
import { claimSql, ClaimSql } from '../storage/sql/claims.sql.js';
import type { ClaimFence } from '../storage/types.js';
import type { OwnershipConfig } from './config.js';

/** Ownership 'lease': one store-wide lease; only its holder runs anything. */
export class GlobalLease {
  private epoch: string | null = null;
  private validUntil = 0;
  private readonly q: ClaimSql;

  constructor(
    private readonly sql: SqlClient,
    schema: string,
    readonly engineId: string,
    readonly config: OwnershipConfig,
    /** Renewal's own connection, so it never queues behind the pool. */
    private readonly renewSql: Pick<SqlClient, 'query'> = sql,
  ) {
    this.q = claimSql(schema);
  }

  get held(): boolean {
    return this.epoch !== null;
  }

  /** Held and not possibly expired by this engine's own clock. */
  get valid(): boolean {
    return this.epoch !== null && this.validUntil > performance.now();
  }

  fence(): ClaimFence | undefined {
    return this.epoch === null ? undefined : { engineId: this.engineId, epoch: this.epoch };
  }

  /** Waits up to leaseWaitTimeout for the lease to be free (or expired), then takes it. */
  async acquire(): Promise<string> {
    await this.sql.query(this.q.leaseEnsure);
    const deadline = Date.now() + this.config.leaseWaitMs;
    let holder: string | null = null;
    for (;;) {
      const [row] = await this.sql.query<{ epoch: string; holder: string | null; free: boolean }>(this.q.leaseRead, [this.config.graceMs]);
      holder = row.holder;
      if (row.free || row.holder === this.engineId) {
        const sentAt = performance.now();
        const got = await this.sql.query<{ epoch: string }>(this.q.leaseAcquire, [
          this.engineId,
          this.config.ttlMs,
          row.epoch,
          row.holder,
          row.holder === this.engineId ? -1e12 : this.config.graceMs,
        ]);
        if (got.length) {
          this.epoch = got[0].epoch;
          this.validUntil = sentAt + this.config.ttlMs;
          return this.epoch;
        }
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new EngineLeaseNotHeldError(this.engineId, holder);
      await new Promise((r) => setTimeout(r, Math.min(this.config.renewMs, left)));
    }
  }

  /** False when the lease was lost (another engine took it over). */
  async renew(): Promise<boolean> {
    if (this.epoch === null) return false;
    const sentAt = performance.now();
    const rows = await this.renewSql.query(this.q.leaseRenew, [this.engineId, this.epoch, this.config.ttlMs]);
    if (rows.length === 0) this.epoch = null;
    else this.validUntil = sentAt + this.config.ttlMs;
    return rows.length === 1;
  }

  lose(): void {
    this.epoch = null;
  }

  async release(): Promise<boolean> {
    if (this.epoch === null) return false;
    const epoch = this.epoch;
    this.epoch = null;
    await this.sql.query(this.q.leaseRelease, [this.engineId, epoch]).catch(() => undefined);
    return true;
  }
}
