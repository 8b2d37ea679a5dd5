import type { SqlAccess } from '../storage/repositories/weft-repository.js';
import { OwnershipModeMismatchError, OwnershipUnsupportedError } from '../common/errors.js';
import { OwnershipMarkerRepository } from '../storage/repositories/ownership-marker.repository.js';
import type { OwnershipMode } from './config.js';

/**
 * The ownership bootstrap's construction gates (docs/ownership.md), run before any recovery, timer
 * poll or claim. 'none' engines never touch the marker.
 */
export async function runOwnershipGates(sql: SqlAccess, schema: string, mode: OwnershipMode): Promise<void> {
  if (mode === 'none') return;
  // Gate 1: fenced writes need row locks and compare-and-swap UPDATEs: a real PostgreSQL 13+.
  const marker = new OwnershipMarkerRepository(sql, schema);
  const v = await marker.serverVersion();
  if (v < 130000) throw new OwnershipUnsupportedError(mode, `PostgreSQL ${v} is older than 13`);
  // Gate 2: the mode marker, insert-if-absent; on a lost race the winner's row is re-read.
  const row = await marker.establish(mode);
  if (!row) throw new OwnershipUnsupportedError(mode, 'the ownership marker could not be written or read');
  if (row.mode !== mode) throw new OwnershipModeMismatchError(mode, row.mode, row.establishedAt);
}
