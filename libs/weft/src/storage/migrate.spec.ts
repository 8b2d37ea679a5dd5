import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { InvalidConfigurationError, MigrationFailedError } from '../common/errors.js';
import { openDatabase } from './data-source.js';
import { weftMigrations } from './migrations/index.js';

describe('migrations', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => tdb?.drop());

  it('replicas migrating at once apply each migration exactly once, in the configured schema', async () => {
    const dbs = await Promise.all(Array.from({ length: 4 }, () => openDatabase({ database: { url: tdb.url }, schema: 'replica_s' })));
    try {
      const applied = await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM replica_s.weft_schema_migrations');
      expect(applied[0].n).toBe(weftMigrations('replica_s').length);
      const tables = await tdb.query<{ table_name: string }>(
        `SELECT table_name FROM information_schema.tables WHERE table_schema = 'replica_s' ORDER BY table_name`,
      );
      expect(tables.map((t) => t.table_name)).toEqual([
        'weft_events',
        'weft_global_lease',
        'weft_messages',
        'weft_operations',
        'weft_ownership_marker',
        'weft_queues',
        'weft_schedules',
        'weft_schema_migrations',
        'weft_step_progress',
        'weft_stream_entries',
        'weft_streams',
        'weft_timers',
        'weft_workflow_claims',
        'weft_workflows',
      ]);
      const idx = await tdb.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = 'replica_s'`);
      const names = idx.map((i) => i.indexname);
      for (const want of ['weft_timers_fire_at_idx', 'weft_messages_unconsumed_idx', 'weft_workflows_status_type_idx']) {
        expect(names).toContain(want);
      }
      // Renewal and release updates stay HOT: only the key indexes claims, and pages keep room
      // (decision 0004, migration 1733918000000).
      expect(names.filter((n) => n.startsWith('weft_workflow_claims'))).toEqual(['weft_workflow_claims_pkey']);
      const [claims] = await tdb.query<{ reloptions: string[] }>(
        `SELECT c.reloptions FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'replica_s' AND c.relname = 'weft_workflow_claims'`,
      );
      expect(claims.reloptions).toContain('fillfactor=70');
    } finally {
      await Promise.all(dbs.map((d) => d.close()));
    }
  });

  it('accepts an existing DataSource and leaves it open', async () => {
    const ds = new DataSource({ type: 'postgres', url: tdb.url });
    const db = await openDatabase({ database: ds, schema: 'from_ds' });
    await db.close();
    expect(ds.isInitialized).toBe(true);
    const rows = await ds.query(`SELECT count(*)::int AS n FROM from_ds.weft_workflows`);
    expect(rows[0].n).toBe(0);
    await ds.destroy();
  });

  it('refuses a schema name that is not a plain identifier before connecting', async () => {
    await expect(openDatabase({ database: { url: tdb.url }, schema: 'x"; drop' })).rejects.toBeInstanceOf(InvalidConfigurationError);
  });

  it('names host and port when the server is unreachable', async () => {
    await expect(openDatabase({ database: { url: 'postgres://u:secret@127.0.0.1:1/db' } })).rejects.toMatchObject({
      code: 'WEFT_DATABASE_UNAVAILABLE',
      message: expect.stringContaining('127.0.0.1:1'),
    });
    await expect(openDatabase({ database: { url: 'postgres://u:secret@127.0.0.1:1/db' } })).rejects.toMatchObject({
      message: expect.not.stringContaining('secret'),
    });
  });

  it('a user without CREATE gets MigrationFailedError naming the schema, with the database error as its cause', async () => {
    const role = `weft_noperm_${process.pid}`;
    await tdb.query(`CREATE ROLE ${role} LOGIN`);
    try {
      const url = new URL(tdb.url);
      url.username = role;
      url.password = '';
      const err = await openDatabase({ database: { url: url.toString() }, schema: 'no_grant' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MigrationFailedError);
      expect(err).toMatchObject({ code: 'WEFT_MIGRATION_FAILED', schema: 'no_grant', migration: null, cause: { code: '42501' } });
      expect((err as Error).message).toMatch(/needs CREATE/);
    } finally {
      await tdb.query(`DROP ROLE ${role}`);
    }
  });

  it('a migration that fails is rolled back whole and reported by name', async () => {
    await tdb.query(`CREATE SCHEMA clash`);
    await tdb.query(`CREATE TABLE clash.weft_operations (x int)`);
    const err = await openDatabase({ database: { url: tdb.url }, schema: 'clash' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'WEFT_MIGRATION_FAILED', schema: 'clash', migration: expect.any(String), cause: { code: '42P07' } });
    const left = await tdb.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = 'clash' ORDER BY table_name`,
    );
    expect(left.map((t) => t.table_name)).toEqual(['weft_operations', 'weft_schema_migrations']);
    await expect(tdb.query(`SELECT count(*)::int AS n FROM clash.weft_schema_migrations`)).resolves.toEqual([{ n: 0 }]);
  });
});
