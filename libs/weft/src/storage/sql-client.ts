import { createHash } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { DataSource } from 'typeorm';

/**
 * Thin access to the DataSource's own pg pool: hot paths send one statement per round trip
 * with bound parameters and get plain rows back, without TypeORM's per-query runner.
 */
export class SqlClient {
  private readonly names = new Map<string, string>();

  constructor(private readonly dataSource: DataSource) {}

  get pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!pool) throw new Error('The Weft DataSource is not initialized');
    return pool;
  }

  /**
   * Every statement is sent as a named prepared statement: the hot-path CTEs cost more to plan
   * than to run, and pg prepares each name once per connection.
   */
  async query<R = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    const res = await this.pool.query({ name: this.nameOf(sql), text: sql, values: params });
    return res.rows as R[];
  }

  private nameOf(sql: string): string {
    let name = this.names.get(sql);
    if (!name) {
      name = `weft_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
      this.names.set(sql, name);
    }
    return name;
  }

  /** Runs `fn` in one transaction; rolls back explicitly on any error. */
  async transaction<T>(fn: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await fn(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
}
