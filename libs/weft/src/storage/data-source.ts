import { DataSource } from 'typeorm';
import { DatabaseUnavailableError, InvalidConfigurationError } from '../common/errors.js';
import type { WeftDatabaseOption } from '../common/options.js';
import { WEFT_ENTITIES } from './entities/index.js';
import { detachedPg } from './detached-pool.js';
import { migrateWeftSchema } from './migrate.js';
import { validateSchemaName } from './schema-name.js';
import { SqlClient } from './sql-client.js';

/**
 * The database an engine runs on: `engine.database` and the WEFT_DATABASE provider (published as
 * `WeftDatabase`). The engine's own client and `close()` are internal: dispose() the engine.
 */
export interface OpenedDatabase {
  /** A TypeORM DataSource on Weft's schema, with Weft's entities (read-only use is safe). */
  dataSource: DataSource;
  /** @internal */
  sql: SqlClient;
  schema: string;
  /** Where it is, for logs and health details; never carries credentials. */
  target: { host: string; port: number; kind: 'url' | 'embedded' | 'datasource' };
  /** @internal The engine closes what it opened on dispose(). */
  close(): Promise<void>;
}

function hostPort(url: string): { host: string; port: number } {
  try {
    const u = new URL(url);
    return { host: u.hostname || 'localhost', port: u.port ? Number(u.port) : 5432 };
  } catch {
    throw new InvalidConfigurationError('database.url', 'is not a valid postgres:// URL');
  }
}

async function openUrl(url: string, schema: string, poolSize: number, kind: 'url' | 'embedded'): Promise<OpenedDatabase> {
  const { host, port } = hostPort(url);
  const dataSource = new DataSource({
    type: 'postgres',
    driver: detachedPg,
    url,
    schema,
    entities: WEFT_ENTITIES,
    synchronize: false,
    migrationsRun: false,
    applicationName: 'weft',
    poolSize,
    connectTimeoutMS: 5000,
    extra: { max: poolSize, idleTimeoutMillis: 30000 },
  });
  try {
    await dataSource.initialize();
  } catch (err) {
    throw DatabaseUnavailableError.fromConnectError(host, port, err) ?? err;
  }
  return {
    dataSource,
    sql: new SqlClient(dataSource),
    schema,
    target: { host, port, kind },
    close: async () => {
      if (dataSource.isInitialized) await dataSource.destroy();
    },
  };
}

/**
 * Opens (and migrates) the database Weft runs on. A DataSource passed in stays the caller's:
 * Weft never destroys it.
 */
export async function openDatabase(opts: {
  database?: WeftDatabaseOption;
  schema?: string;
  log?: (line: string) => void;
  /** false: connect only; the caller checks the schema itself (the `weft` CLI never creates or migrates tables). */
  migrate?: boolean;
}): Promise<OpenedDatabase> {
  const schema = validateSchemaName(opts.schema ?? 'public');
  const db = opts.database;
  let opened: OpenedDatabase;
  if (db instanceof DataSource) {
    if (!db.isInitialized) await db.initialize();
    const o = db.options as { host?: string; port?: number; url?: string };
    const where = o.url ? hostPort(o.url) : { host: o.host ?? 'localhost', port: o.port ?? 5432 };
    opened = {
      dataSource: db,
      sql: new SqlClient(db),
      schema,
      target: { ...where, kind: 'datasource' },
      close: async () => undefined,
    };
  } else if (db && typeof db === 'object' && typeof db.url === 'string') {
    opened = await openUrl(db.url, schema, db.poolSize ?? 10, 'url');
  } else if (db === undefined || db === null) {
    const { startEmbeddedPostgres } = await import('./embedded/embedded-postgres.js');
    const server = await startEmbeddedPostgres({ log: opts.log });
    const inner = await openUrl(server.url, schema, 10, 'embedded').catch(async (err) => {
      await server.stop();
      throw err;
    });
    opened = {
      ...inner,
      close: async () => {
        await inner.close();
        await server.stop();
      },
    };
  } else {
    throw new InvalidConfigurationError('database', 'expected { url }, a TypeORM DataSource, or nothing for the embedded server');
  }
  if (opts.migrate === false) return opened;
  try {
    await migrateWeftSchema(opened.dataSource, schema);
  } catch (err) {
    await opened.close();
    throw err;
  }
  return opened;
}
