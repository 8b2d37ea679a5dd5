import { createHash } from 'node:crypto';
import type { ClientConfig, Pool, PoolClient } from 'pg';
import type { DataSource, EntityManager } from 'typeorm';
import { PlanGeneration } from './plan-generation.js';
import { AppTransaction, beginAppTransaction, type TransactionIsolation, type WeftStatements } from './app-transaction.js';
import { guardPoolClients } from './pool-guard.js';

const names = new Map<string, string>();

/** Named prepared statements: the hot-path CTEs cost more to plan than to run. */
export function statementName(sql: string): string {
  let name = names.get(sql);
  if (!name) {
    name = `weft_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;
    names.set(sql, name);
  }
  return name;
}

/** A value bound to a `json` parameter: its JSON text, or SQL NULL for undefined. */
export const jsonParam = (v: unknown): string | null => (v === undefined ? null : JSON.stringify(v));

/**
 * A value bound to a `json` parameter of a lone statement: absent or null is SQL NULL, as a JSON
 * null is in the json_to_recordset of the general statement it stands in for (unlike jsonParam).
 */
export const jsonOrNullParam = (v: unknown): string | null => (v === undefined || v === null ? null : JSON.stringify(v));

/** Anything that runs one statement with bound parameters: the pool, or a dedicated connection. */
export interface Queryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

/**
 * Thin access to the DataSource's own pg pool: hot paths send one statement per round trip
 * with bound parameters and get plain rows back, without TypeORM's per-query runner.
 */
export class SqlClient implements Queryable {
  /** Bumped when a table's size class changes: connections then discard their cached plans (plan-freshness.ts). */
  readonly plans = new PlanGeneration();
  /** The plan generation each pooled connection last ran statements under. */
  private readonly generationOf = new WeakMap<object, number>();
  private watchedPool: Pool | undefined;

  constructor(private readonly dataSource: DataSource) {}

  /** TypeORM's manager of the same DataSource, for the repositories' TypeORM side. */
  get manager(): EntityManager {
    return this.dataSource.manager;
  }

  get pool(): Pool {
    const pool = (this.dataSource.driver as unknown as { master?: Pool }).master;
    if (!pool) throw new Error('The Weft DataSource is not initialized');
    if (this.watchedPool !== pool) {
      // A new connection has no cached plans: it starts in the current generation.
      pool.on('connect', (client) => this.generationOf.set(client, this.plans.value));
      guardPoolClients(pool); // a DataSource given to Weft: the engine checks out its connections too
      this.watchedPool = pool;
    }
    return pool;
  }

  /**
   * Every statement is sent as a named prepared statement: the hot-path CTEs cost more to plan
   * than to run, and pg prepares each name once per connection. A connection whose plans are of
   * an older generation discards them first (docs/decisions/0009).
   */
  async query<R = Record<string, unknown>>(sql: string, params: unknown[] = []): Promise<R[]> {
    const pool = this.pool;
    const generation = this.plans.value;
    const statement = { name: statementName(sql), text: sql, values: params };
    if (generation === 0) return (await pool.query(statement)).rows as R[];
    // What pool.query does, plus the generation check on the connection it checked out.
    const client = await pool.connect();
    let failed: Error | undefined;
    const onError = (err: Error) => void (failed = err);
    client.on('error', onError);
    try {
      this.generationOf.set(client, await this.plans.catchUp(client, this.generationOf.get(client)));
      return (await client.query(statement)).rows as R[];
    } catch (err) {
      failed ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.off('error', onError);
      client.release(failed); // as pool.query: a connection whose statement failed is not reused
    }
  }

  /** A transaction for a transactional step's body, on its own connection (app-transaction.ts); `onEnd` once it ends. */
  beginAppTransaction(isolation?: TransactionIsolation, onEnd?: () => void): Promise<AppTransaction> {
    return beginAppTransaction(this.dataSource, this.weftStatements, isolation, onEnd);
  }

  /**
   * Weft's statements on a connection checked out by someone else (a transactional step's query
   * runner): named prepared statements, as on the pool, with the same plan-generation check.
   */
  private readonly weftStatements: WeftStatements = {
    prepare: (client) => {
      const seen = this.generationOf.get(client);
      if (seen === this.plans.value) return undefined; // current: no DISCARD PLANS, and no await per commit
      return this.plans.catchUp(client, seen).then((now) => void this.generationOf.set(client, now));
    },
    config: ({ sql, params }) => ({ name: statementName(sql), text: sql, values: params }),
  };

  /** The pool's size: transactional bodies hold a connection each and leave some to the rest of the engine. */
  get poolMax(): number {
    return (this.pool as unknown as { options: { max?: number } }).options.max ?? 10;
  }

  /** Connection settings of the pool, for connections Weft opens beside it. */
  connectionConfig(): ClientConfig {
    const o = (this.pool as unknown as { options: ClientConfig & { max?: number } }).options;
    return { ...o };
  }

  /**
   * Runs `fn` in one transaction; rolls back explicitly on any error. A checked-out client has no
   * pool listener: without one of its own, a connection killed mid-transaction (a database
   * restart) would emit an unhandled 'error' and crash the process. A broken client (one that
   * emitted an error, or cannot even roll back) is destroyed, not returned to the pool. `fn` gets
   * the client and the same connection as a Queryable, for repository methods that take `via`.
   */
  async transaction<T>(fn: (client: PoolClient, via: Queryable) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    const onError = (err: Error) => void (broken = err);
    client.on('error', onError);
    try {
      await client.query('BEGIN');
      const via: Queryable = { query: async <R>(text: string, values?: unknown[]) => (await client.query({ text, values })).rows as R[] };
      const out = await fn(client, via);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      const rolledBack = await client.query('ROLLBACK').then(
        () => true,
        () => false,
      );
      if (!rolledBack) broken ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
  }
}
