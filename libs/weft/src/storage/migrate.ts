import { DataSource } from 'typeorm';
import { MigrationFailedError } from '../common/errors.js';
import { weftMigrations } from './migrations/index.js';
import { qualify } from './schema-name.js';

/**
 * Applies Weft's migrations under a session advisory lock so replicas that boot together
 * apply each migration exactly once. Runs on its own query runner: it never touches the
 * user's TypeORM migrations table.
 */
export async function migrateWeftSchema(dataSource: DataSource, schema: string): Promise<string[]> {
  const qr = dataSource.createQueryRunner();
  await qr.connect();
  const applied: string[] = [];
  try {
    await qr.query('SELECT pg_advisory_lock(hashtext($1))', [`weft:migrate:${schema}`]);
    try {
      const table = qualify(schema, 'weft_schema_migrations');
      const rows: Array<{ id: string }> = await (async () => {
        await qr.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
        await qr.query(
          `CREATE TABLE IF NOT EXISTS ${table} (id bigint PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
        );
        return qr.query(`SELECT id FROM ${table}`);
      })().catch((err: unknown) => {
        throw new MigrationFailedError(schema, null, { cause: err });
      });
      const done = new Set(rows.map((r) => Number(r.id)));
      for (const { id, migration } of weftMigrations(schema)) {
        if (done.has(id)) continue;
        await qr.startTransaction();
        try {
          await migration.up(qr);
          await qr.query(`INSERT INTO ${table} (id, name) VALUES ($1, $2)`, [id, migration.name ?? String(id)]);
          await qr.commitTransaction();
        } catch (err) {
          await qr.rollbackTransaction().catch(() => undefined);
          throw new MigrationFailedError(schema, migration.name ?? String(id), { cause: err });
        }
        applied.push(migration.name ?? String(id));
      }
    } finally {
      await qr.query('SELECT pg_advisory_unlock(hashtext($1))', [`weft:migrate:${schema}`]);
    }
  } finally {
    await qr.release();
  }
  return applied;
}
