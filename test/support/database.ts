import { randomBytes } from 'node:crypto';
import { Client, type Pool } from 'pg';

export interface TestDatabase {
  url: string;
  name: string;
  /** Runs one statement on the test database with a short-lived client. */
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
  drop(): Promise<void>;
}

export function adminUrl(): string {
  const url = process.env.WEFT_TEST_ADMIN_URL ?? process.env.WEFT_TEST_DATABASE_URL;
  if (!url) throw new Error('WEFT_TEST_ADMIN_URL is not set: run the tests through vitest (its global setup provides it)');
  return url;
}

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** A fresh database per test file on the test server; drop() removes it (and kicks stragglers). */
export async function createTestDatabase(prefix = 'weft_test'): Promise<TestDatabase> {
  const name = `${prefix}_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  const url = withDatabase(adminUrl(), name);
  return {
    url,
    name,
    async query(sql, params = []) {
      const c = new Client({ connectionString: url });
      await c.connect();
      try {
        return (await c.query(sql, params)).rows;
      } finally {
        await c.end();
      }
    },
    async drop() {
      const c = new Client({ connectionString: adminUrl() });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/**
 * Runs `CREATE ... IF NOT EXISTS` statements from processes started together. IF NOT EXISTS is not
 * concurrency-safe in PostgreSQL (the loser gets "already exists" on the table or on its row type),
 * so they run in one transaction under an advisory lock: one process at a time, and every caller
 * returns once all of them exist.
 */
export async function createTablesOnce(pool: Pool, statements: string[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('weft-test-fixture-tables'))`);
    for (const sql of statements) await client.query(sql);
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
