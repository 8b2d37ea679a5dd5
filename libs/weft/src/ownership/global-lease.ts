import type { SqlAccess } from '../storage/repositories/weft-repository.js';
import { EngineLeaseNotHeldError } from '../common/errors.js';
import { LeaseRepository } from '../storage/repositories/lease.repository.js';
import type { Queryable } from '../storage/sql-client.js';
import type { ClaimFence } from '../storage/types.js';
import type { OwnershipConfig } from './config.js';

/** Ownership 'lease': one store-wide lease; only its holder runs anything. */
export class GlobalLease {
  private epoch: string | null = null;
  private validUntil = 0;
  private readonly leases: LeaseRepository;
  private readonly renewSql: Queryable;
  readonly engineId: string;
  readonly config: OwnershipConfig;

  constructor(deps: { sql: SqlAccess; schema: string; engineId: string; config: OwnershipConfig; renewSql?: Queryable }) {
    this.leases = new LeaseRepository(deps.sql, deps.schema);
    /** Renewal's own connection, so it never queues behind the pool. */
    this.renewSql = deps.renewSql ?? deps.sql;
    this.engineId = deps.engineId;
    this.config = deps.config;
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
    await this.leases.ensure();
    const deadline = Date.now() + this.config.leaseWaitMs;
    let holder: string | null = null;
    for (;;) {
      const row = (await this.leases.read(this.config.graceMs))!;
      holder = row.holder;
      if (row.free || row.holder === this.engineId) {
        const sentAt = performance.now();
        // Its own lease (a restart under the same engine id) is taken back at once, not after the grace.
        const grace = row.holder === this.engineId ? -1e12 : this.config.graceMs;
        const got = await this.leases.acquire(this.engineId, this.config.ttlMs, row, grace);
        if (got !== null) {
          this.epoch = got;
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
    const renewed = await this.leases.renew(this.renewSql, this.engineId, this.epoch, this.config.ttlMs);
    if (!renewed) this.epoch = null;
    else this.validUntil = sentAt + this.config.ttlMs;
    return renewed;
  }

  lose(): void {
    this.epoch = null;
  }

  async release(): Promise<boolean> {
    if (this.epoch === null) return false;
    const epoch = this.epoch;
    this.epoch = null;
    await this.leases.release(this.engineId, epoch).catch(() => undefined);
    return true;
  }
}
