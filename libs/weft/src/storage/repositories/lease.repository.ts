// weft_global_lease: the one row of ownership 'lease'; compare-and-swap on (epoch, holder), expiry
// by the database clock.
import { GlobalLeaseEntity } from '../entities/ownership.entities.js';
import type { Queryable } from '../sql-client.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';

function statements(schema: string) {
  const lease = qualify(schema, 'weft_global_lease');
  return {
    ensure: `INSERT INTO ${lease} (id) VALUES (1) ON CONFLICT (id) DO NOTHING`,
    read: `SELECT epoch::text AS epoch, holder, expires_at,
                       (holder IS NULL OR expires_at + $1 * interval '1 millisecond' < clock_timestamp()) AS free
                FROM ${lease} WHERE id = 1`,
    acquire: `UPDATE ${lease} SET epoch = epoch + 1, holder = $1, expires_at = clock_timestamp() + $2 * interval '1 millisecond'
                   WHERE id = 1 AND epoch = $3::bigint AND holder IS NOT DISTINCT FROM $4
                     AND (holder IS NULL OR expires_at + $5 * interval '1 millisecond' < clock_timestamp())
                   RETURNING epoch::text AS epoch`,
    renew: `UPDATE ${lease} SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
                 WHERE id = 1 AND holder = $1 AND epoch = $2::bigint RETURNING epoch`,
    release: `UPDATE ${lease} SET holder = NULL, expires_at = NULL WHERE id = 1 AND holder = $1 AND epoch = $2::bigint`,
  };
}

export class LeaseRepository extends WeftRepository<GlobalLeaseEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(db: SqlAccess, schema: string) {
    super(db, GlobalLeaseEntity, 'weft_global_lease');
    this.q = statements(schema);
  }

  async ensure(): Promise<void> {
    await this.db.query(this.q.ensure);
  }

  /** The lease as the database sees it; `free`: no holder, or expired past `graceMs`. */
  async read(graceMs: number): Promise<{ epoch: string; holder: string | null; free: boolean } | undefined> {
    return (await this.db.query<{ epoch: string; holder: string | null; free: boolean }>(this.q.read, [graceMs]))[0];
  }

  /** At the epoch and holder as read; the new epoch, or null on a lost race. */
  async acquire(engineId: string, ttlMs: number, seen: { epoch: string; holder: string | null }, graceMs: number): Promise<string | null> {
    const rows = await this.db.query<{ epoch: string }>(this.q.acquire, [engineId, ttlMs, seen.epoch, seen.holder, graceMs]);
    return rows[0]?.epoch ?? null;
  }

  /** On `via` (renewal's own connection); false if the lease is no longer this engine's at `epoch`. */
  async renew(via: Queryable, engineId: string, epoch: string, ttlMs: number): Promise<boolean> {
    return (await via.query(this.q.renew, [engineId, epoch, ttlMs])).length === 1;
  }

  async release(engineId: string, epoch: string): Promise<void> {
    await this.db.query(this.q.release, [engineId, epoch]);
  }
}
