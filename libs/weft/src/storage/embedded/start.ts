// The embedded server as public API: an app that opens its own DataSource on the zero-configuration
// default (and gives it to Weft as `database: dataSource`) starts the same server Weft would.
// Loaded lazily, so an app on its own PostgreSQL never loads the embedded code.
import type { EmbeddedPostgresHandle, EmbeddedPostgresOptions } from './embedded-postgres.js';

export type { EmbeddedPostgresHandle, EmbeddedPostgresOptions };

/**
 * Starts (or joins, when another process of the app runs it) the embedded PostgreSQL under
 * `dataDir` (default `./.weft/pg`) and resolves with its URL; `stop()` stops it once no process
 * uses it. Needs the optional peer `embedded-postgres`.
 */
export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const embedded = await import('./embedded-postgres.js');
  return embedded.startEmbeddedPostgres(opts);
}
