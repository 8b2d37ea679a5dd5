// A transaction on one connection of the DataSource Weft runs on, handed to a transactional
// step's body as a TypeORM EntityManager (docs/transactions.md). The step's record is written on
// the same connection (WorkflowRepository.advanceOn) before COMMIT.
import type { PoolClient } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

import type { TransactionIsolation } from '../common/types.js';

export type { TransactionIsolation };

/** The isolation levels a transactional step may ask for. */
export const ISOLATION_LEVELS: readonly TransactionIsolation[] = ['read committed', 'repeatable read', 'serializable'];

const TYPEORM_LEVEL = {
  'read committed': 'READ COMMITTED',
  'repeatable read': 'REPEATABLE READ',
  serializable: 'SERIALIZABLE',
} as const;

/** Runs one statement on the transaction's connection (a Queryable of sql-client.ts). */
interface TransactionQueryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

/** One open transaction: what the body writes through, and its end. */
export interface AppTransaction {
  readonly manager: EntityManager;
  /** The same connection, for Weft's own statements inside the transaction. */
  readonly via: TransactionQueryable;
  commit(): Promise<void>;
  /** Rolls back (best effort) and returns the connection; safe to call after a failed commit. */
  rollback(): Promise<void>;
}

/** SQLSTATEs after which the same transaction may simply be tried again: serialization failure, deadlock. */
const RETRYABLE = new Set(['40001', '40P01']);

/** A serialization failure or a deadlock, thrown by the driver or wrapped by TypeORM. */
export function isSerializationFailure(err: unknown): boolean {
  const e = err as { code?: unknown; driverError?: { code?: unknown } } | undefined;
  const code = e?.code ?? e?.driverError?.code;
  return typeof code === 'string' && RETRYABLE.has(code);
}

/**
 * The COMMIT itself failed other than by a serialization failure (the connection broke): whether
 * it landed is unknown, and only storage can tell.
 */
export class CommitOutcomeUnknown extends Error {
  constructor(cause: unknown) {
    super(`The outcome of a COMMIT is unknown: ${(cause as Error)?.message ?? String(cause)}`, { cause });
  }
}

class QueryRunnerTransaction implements AppTransaction {
  private ended = false;
  readonly via: TransactionQueryable;

  constructor(
    private readonly runner: QueryRunner,
    via?: TransactionQueryable,
  ) {
    this.via = via ?? { query: async <R>(text: string, values?: unknown[]) => (await runner.query(text, values)) as R[] };
  }

  get manager(): EntityManager {
    return this.runner.manager;
  }

  async commit(): Promise<void> {
    this.ended = true;
    try {
      await this.runner.commitTransaction();
    } catch (err) {
      throw isSerializationFailure(err) ? err : new CommitOutcomeUnknown(err);
    } finally {
      await this.release();
    }
  }

  async rollback(): Promise<void> {
    if (this.ended) return this.release();
    this.ended = true;
    try {
      if (this.runner.isTransactionActive) await this.runner.rollbackTransaction();
    } catch {
      // The connection is broken or the server is away: PostgreSQL rolls the transaction back itself.
    } finally {
      await this.release();
    }
  }

  private async release(): Promise<void> {
    if (!this.runner.isReleased) await this.runner.release().catch(() => undefined);
  }
}

/**
 * Opens a transaction on a fresh connection of `dataSource`. `weftVia`: how Weft's own statements
 * run on that connection (SqlClient's named, plan-fresh statements), given its pg client.
 */
export async function beginAppTransaction(
  dataSource: DataSource,
  isolation?: TransactionIsolation,
  weftVia?: (client: PoolClient) => TransactionQueryable,
): Promise<AppTransaction> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    await runner.startTransaction(isolation ? TYPEORM_LEVEL[isolation] : undefined);
  } catch (err) {
    await runner.release().catch(() => undefined);
    throw err;
  }
  const client = (runner as unknown as { databaseConnection?: PoolClient }).databaseConnection;
  return new QueryRunnerTransaction(runner, client && weftVia ? weftVia(client) : undefined);
}

/** What makes two connections "the same database": the cluster's system identifier and the database name. */
export const DATABASE_IDENTITY_SQL =
  'SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system_identifier, current_database() AS database';

export interface DatabaseIdentity {
  systemIdentifier: string;
  database: string;
}

/** Reads the identity of the database `via` is connected to. */
export async function databaseIdentity(via: TransactionQueryable): Promise<DatabaseIdentity> {
  const [row] = await via.query<{ system_identifier: string; database: string }>(DATABASE_IDENTITY_SQL);
  return { systemIdentifier: row.system_identifier, database: row.database };
}

export const sameDatabase = (a: DatabaseIdentity, b: DatabaseIdentity): boolean =>
  a.systemIdentifier === b.systemIdentifier && a.database === b.database;
