import type { DataSource } from 'typeorm';

/** Any fixed key: the demo's processes that boot together create the table one at a time. */
const SCHEMA_LOCK = 741_852;

/**
 * The demo's one table, created when missing. Under an advisory lock: two `CREATE TABLE IF NOT
 * EXISTS` at once can still collide in PostgreSQL's catalog, and two demo processes may boot together.
 */
export async function ensureDemoSchema(dataSource: DataSource): Promise<void> {
  await dataSource.transaction(async (manager) => {
    await manager.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await manager.query('CREATE SCHEMA IF NOT EXISTS demo');
    await manager.query(`CREATE TABLE IF NOT EXISTS demo.orders (
      order_id varchar(64) PRIMARY KEY,
      status varchar(32) NOT NULL,
      amount integer NOT NULL,
      charge_id varchar(64),
      tracking_number varchar(64),
      writes integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`);
  });
}
