import { OwnershipModeMismatchError, OwnershipUnsupportedError } from '../common/errors.js';
import type { SqlClient } from '../storage/sql-client.js';
import { claimSql } from '../storage/sql/claims.sql.js';
import type { OwnershipMode } from './config.js';

/**
 * The ownership bootstrap's construction gates (docs/ownership.md), run before any recovery, timer
 * poll or claim. 'none' engines never touch the marker.
 */
export async function runOwnershipGates(sql: SqlClient, schema: string, mode: OwnershipMode): Promise<void> {
  if (mode === 'none') return;
  // Gate 1: fenced writes need row locks and compare-and-swap UPDATEs: a real PostgreSQL 13+.
  const [{ server_version_num: v }] = await sql.query<{ server_version_num: string }>('SHOW server_version_num');
  if (Number(v) < 130000) throw new OwnershipUnsupportedError(mode, `PostgreSQL ${v} is older than 13`);
  // Gate 2: the mode marker, insert-if-absent; on a lost race the winner's row is re-read.
  const q = claimSql(schema);
  const inserted = await sql.query<{ mode: string; established_at: Date }>(q.markerInsert, [mode]);
  const row = inserted[0] ?? (await sql.query<{ mode: string; established_at: Date }>(q.markerRead))[0];
  if (!row) throw new OwnershipUnsupportedError(mode, 'the ownership marker could not be written or read');
  if (row.mode !== mode) throw new OwnershipModeMismatchError(mode, row.mode, row.established_at);
}
