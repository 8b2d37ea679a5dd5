import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { Client } from 'pg';
import { validateSchemaName } from '../storage/schema-name.js';
import type { EmbeddedPostgresHandle } from '../storage/embedded/embedded-postgres.js';
import { startEmbeddedInChild } from './embedded-in-child.js';

/** Where a test environment's schema lives, and how it goes away (docs/testing.md#databases). */
export interface TestDatabase {
  url: string;
  schema: string;
  /** Drops the schema with everything in it. */
  drop(): Promise<void>;
  /** Lets go of the server (an embedded one stops with its last environment). */
  release(): Promise<void>;
}

/** The embedded server of this test process, shared by its environments while any is open. */
let embedded: { handle: Promise<Pick<EmbeddedPostgresHandle, 'url' | 'stop'>>; users: number } | undefined;

/** The embedded server under `.weft/test-pg` (joined when another process already runs it). */
async function startEmbedded(): Promise<Pick<EmbeddedPostgresHandle, 'url' | 'stop'>> {
  const dataDir = path.resolve(process.cwd(), '.weft/test-pg');
  let load: typeof import('../storage/embedded/embedded-postgres.js');
  try {
    load = await import('../storage/embedded/embedded-postgres.js');
  } catch (err) {
    // jest's CommonJS runtime (before Node 24.9) cannot load ES modules (the server's, and the
    // embedded-postgres package): a plain Node child process runs it instead.
    return startEmbeddedInChild(dataDir, err);
  }
  return load.startEmbeddedPostgres({ dataDir });
}

/**
 * For a test runner's global setup: starts the embedded server once for the whole run, so
 * environments find it through WEFT_TEST_DATABASE_URL (docs/testing.md#databases).
 */
export async function startTestDatabaseServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const handle = await startEmbedded();
  return { url: handle.url, stop: () => handle.stop() };
}

/**
 * The server: `databaseUrl`, else WEFT_TEST_DATABASE_URL, else WEFT_TEST_ADMIN_URL (this
 * repository's own test runner sets it), else the embedded server, started by the first
 * environment of the process and stopped when the last one closes (the server itself stays
 * while another process uses it). `release` is called once the environment is closed.
 */
async function serverUrl(databaseUrl: string | undefined): Promise<{ url: string; release(): Promise<void> }> {
  const url = databaseUrl ?? process.env.WEFT_TEST_DATABASE_URL ?? process.env.WEFT_TEST_ADMIN_URL;
  if (url) return { url, release: async () => undefined };
  const shared = (embedded ??= { handle: startEmbedded(), users: 0 });
  shared.users++;
  const release = async () => {
    if (--shared.users > 0) return;
    if (embedded === shared) embedded = undefined;
    await (await shared.handle).stop();
  };
  try {
    return { url: (await shared.handle).url, release };
  } catch (err) {
    if (embedded === shared) embedded = undefined; // a failed start is tried again by the next environment
    throw err;
  }
}

/** A fresh schema name per environment: test files running at once never share tables. */
export function freshSchemaName(): string {
  return `weft_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
}

export async function testDatabase(o: { databaseUrl?: string; schema?: string }): Promise<TestDatabase> {
  const { url, release } = await serverUrl(o.databaseUrl);
  const schema = validateSchemaName(o.schema ?? freshSchemaName());
  return {
    url,
    schema,
    release,
    async drop() {
      const c = new Client({ connectionString: url });
      c.on('error', () => undefined); // a connection lost mid-drop rejects the query; unheard, it would crash the process
      await c.connect();
      try {
        await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await c.end();
      }
    },
  };
}
