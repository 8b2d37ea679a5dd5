import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { validateSchemaName } from '../storage/schema-name.js';
import type { EmbeddedPostgresHandle } from '../storage/embedded/embedded-postgres.js';

/** Where a test environment's schema lives, and how it goes away (docs/testing.md#databases). */
export interface TestDatabase {
  url: string;
  schema: string;
  /** Drops the schema with everything in it. */
  drop(): Promise<void>;
}

/** One embedded server per test process, shared by its environments (and joined by other processes). */
let embedded: Promise<EmbeddedPostgresHandle> | undefined;

/**
 * The server: `databaseUrl`, else WEFT_TEST_DATABASE_URL, else WEFT_TEST_ADMIN_URL (this
 * repository's own test runner sets it), else the embedded server under `.weft/test-pg`,
 * started once and left to the other environments of the run.
 */
async function serverUrl(databaseUrl: string | undefined): Promise<string> {
  const url = databaseUrl ?? process.env.WEFT_TEST_DATABASE_URL ?? process.env.WEFT_TEST_ADMIN_URL;
  if (url) return url;
  embedded ??= import('../storage/embedded/embedded-postgres.js').then(async ({ startEmbeddedPostgres }) => {
    const handle = await startEmbeddedPostgres({ dataDir: path.resolve(process.cwd(), '.weft/test-pg') });
    // The last process to leave stops it (the server's own rule: it stays while another uses it).
    process.once('beforeExit', () => void handle.stop());
    return handle;
  });
  embedded.catch(() => (embedded = undefined)); // a failed start is tried again by the next environment
  return (await embedded).url;
}

/** A fresh schema name per environment: test files running at once never share tables. */
export function freshSchemaName(): string {
  return `weft_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

export async function testDatabase(o: { databaseUrl?: string; schema?: string }): Promise<TestDatabase> {
  const url = await serverUrl(o.databaseUrl);
  const schema = validateSchemaName(o.schema ?? freshSchemaName());
  return {
    url,
    schema,
    async drop() {
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}
