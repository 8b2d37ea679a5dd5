// weft_ownership_marker: the mode a database was established with, written once, read by every
// fencing engine's start-up gate.
import { OwnershipMarkerEntity } from '../entities/ownership.entities.js';
import { type SqlAccess, WeftRepository } from './weft-repository.js';
import { qualify } from '../schema-name.js';

function statements(schema: string) {
  const marker = qualify(schema, 'weft_ownership_marker');
  return {
    insert: `INSERT INTO ${marker} (id, mode) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING mode, established_at`,
    read: `SELECT mode, established_at FROM ${marker} WHERE id = 1`,
  };
}

export class OwnershipMarkerRepository extends WeftRepository<OwnershipMarkerEntity> {
  private readonly q: ReturnType<typeof statements>;

  constructor(db: SqlAccess, schema: string) {
    super(db, OwnershipMarkerEntity, 'weft_ownership_marker');
    this.q = statements(schema);
  }

  /** The server's version number (e.g. 150019). */
  async serverVersion(): Promise<number> {
    const [{ server_version_num: v }] = await this.db.query<{ server_version_num: string }>('SHOW server_version_num');
    return Number(v);
  }

  /** Writes `mode` if no marker exists; returns the marker as it is now (the winner's on a race). */
  async establish(mode: string): Promise<{ mode: string; establishedAt: Date } | null> {
    const inserted = await this.db.query<{ mode: string; established_at: Date }>(this.q.insert, [mode]);
    const row = inserted[0] ?? (await this.db.query<{ mode: string; established_at: Date }>(this.q.read))[0];
    return row ? { mode: row.mode, establishedAt: row.established_at } : null;
  }
}
