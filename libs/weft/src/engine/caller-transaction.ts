// Transactional starts and messages (docs/transactions.md): start, signalWithStart, signal and
// cancel write inside the caller's transaction, given as `manager` or found as the ambient one of
// typeorm-transactional or @nestjs-cls/transactional, so they exist iff it commits. What follows
// a write (launching the run, waking its owner) runs once TypeORM reports the COMMIT.
import type { DataSource, EntityManager, EntitySubscriberInterface, QueryRunner } from 'typeorm';
import { InvalidArgumentError, TransactionDatabaseMismatchError } from '../common/errors.js';
import { databaseIdentity, sameDatabase, type DatabaseIdentity } from '../storage/app-transaction.js';
import type { Queryable } from '../storage/sql-client.js';
import type { AmbientTransactions } from './ambient/ambient-transactions.js';

/** The caller's open transaction: Weft's statements go on its connection; effects wait for its COMMIT. */
export interface CallerTransaction {
  readonly via: Queryable;
  /** Runs `fn` after the transaction commits; never if it rolls back. */
  onCommit(fn: () => void): void;
}

interface Pending {
  depth: number;
  fn: () => void;
}

const depthOf = (qr: QueryRunner): number => (qr as unknown as { transactionDepth?: number }).transactionDepth ?? 1;

export class CallerTransactions {
  private readonly identities = new WeakMap<DataSource, Promise<DatabaseIdentity>>();
  private readonly watched = new WeakSet<DataSource>();
  private readonly pending = new WeakMap<QueryRunner, Pending[]>();

  constructor(
    private readonly weft: { dataSource: DataSource; via: Queryable },
    private readonly ambient: AmbientTransactions,
  ) {}

  /**
   * As resolve(), but undefined at once (no await) without a manager or an active ambient
   * transaction, as most calls are.
   */
  join(operation: string, manager: EntityManager | undefined): Promise<CallerTransaction | undefined> | undefined {
    if (manager === undefined && !(this.ambient.any && this.ambient.current(this.weft.dataSource))) return undefined;
    return this.resolve(operation, manager);
  }

  /**
   * The transaction `operation` writes in: `manager`'s, else the ambient one, else none (a plain
   * write). A transaction on another database than Weft's is refused before anything is written.
   */
  async resolve(operation: string, manager: EntityManager | undefined): Promise<CallerTransaction | undefined> {
    if (manager !== undefined && !isManager(manager)) throw new InvalidArgumentError('manager', 'must be a TypeORM EntityManager');
    const m = manager ?? this.ambient.current(this.weft.dataSource);
    const runner = m?.queryRunner;
    if (!m || !runner?.isTransactionActive) {
      if (m) await this.checkSameDatabase(operation, m);
      return undefined; // not in a transaction: the write commits on its own, as without a manager
    }
    await this.checkSameDatabase(operation, m);
    this.watch(m.connection);
    return {
      via: { query: async <R>(text: string, values?: unknown[]) => (await runner.query(text, values)) as R[] },
      onCommit: (fn) => {
        const list = this.pending.get(runner) ?? [];
        list.push({ depth: depthOf(runner), fn });
        this.pending.set(runner, list);
      },
    };
  }

  private async checkSameDatabase(operation: string, m: EntityManager): Promise<void> {
    const ds = m.connection;
    if (ds === this.weft.dataSource) return;
    const given = await this.identityOf(ds, { query: (sql: string, p?: unknown[]) => m.query(sql, p) });
    const weft = await this.identityOf(this.weft.dataSource, this.weft.via);
    if (!sameDatabase(given, weft)) throw new TransactionDatabaseMismatchError(operation, given, weft);
  }

  /** Once per DataSource: a DataSource never moves to another database. */
  private identityOf(ds: DataSource, via: Queryable): Promise<DatabaseIdentity> {
    let p = this.identities.get(ds);
    if (!p) {
      p = databaseIdentity(via);
      p.catch(() => this.identities.delete(ds));
      this.identities.set(ds, p);
    }
    return p;
  }

  /** One subscriber per DataSource hears every COMMIT and ROLLBACK of its query runners. */
  private watch(ds: DataSource): void {
    if (this.watched.has(ds)) return;
    this.watched.add(ds);
    const subscriber: EntitySubscriberInterface = {
      afterTransactionCommit: ({ queryRunner }) => {
        if (queryRunner.isTransactionActive) return; // a savepoint released: the transaction goes on
        const list = this.pending.get(queryRunner);
        this.pending.delete(queryRunner);
        for (const p of list ?? []) p.fn();
      },
      afterTransactionRollback: ({ queryRunner }) => {
        const list = this.pending.get(queryRunner);
        if (!list) return;
        // Rolled back to a savepoint: what was written inside it is gone, the rest stays pending.
        const kept = queryRunner.isTransactionActive ? list.filter((p) => p.depth <= depthOf(queryRunner)) : [];
        if (kept.length) this.pending.set(queryRunner, kept);
        else this.pending.delete(queryRunner);
      },
    };
    ds.subscribers.push(subscriber);
  }
}

function isManager(m: unknown): m is EntityManager {
  return typeof m === 'object' && m !== null && 'connection' in m && typeof (m as EntityManager).query === 'function';
}
