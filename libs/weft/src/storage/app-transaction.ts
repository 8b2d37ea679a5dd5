// A transaction on one connection of the DataSource Weft runs on, handed to a transactional
// step's body as a TypeORM EntityManager (docs/transactions.md). The step's record is written on
// the same connection and committed with it (WorkflowRepository.advanceAndCommit). Two round trips
// besides the body's own: its BEGIN rides with the body's first statement, and the record, its
// check and the COMMIT go together (docs/decisions/0030); each of the two is one query ending in
// one Sync (pg-batch.ts, docs/decisions/0044).
import type { PoolClient } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

import type { TransactionIsolation } from '../common/types.js';
import { sendBatch, type BatchStatement } from './pg-batch.js';

export type { TransactionIsolation };

/** The isolation levels a transactional step may ask for. */
export const ISOLATION_LEVELS: readonly TransactionIsolation[] = ['read committed', 'repeatable read', 'serializable'];

const TYPEORM_LEVEL = {
  'read committed': 'READ COMMITTED',
  'repeatable read': 'REPEATABLE READ',
  serializable: 'SERIALIZABLE',
} as const;

/** Runs one statement on a connection (a Queryable of sql-client.ts). */
interface TransactionQueryable {
  query<R = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<R[]>;
}

/** One of Weft's statements, sent named with bound parameters. */
export interface WeftStatement {
  sql: string;
  params: unknown[];
}

/** How Weft sends its own statements on a transaction's connection (SqlClient: named, plan-fresh). */
export interface WeftStatements {
  /** Brings the connection's cached plans up to date (before anything is pipelined on it); undefined: they are. */
  prepare(client: PoolClient): Promise<void> | undefined;
  /** The pg query config of a statement (its prepared statement's name). */
  config(statement: WeftStatement): { name: string; text: string; values: unknown[] };
}

/** What `commitAfter` came to: each statement's rows or error, and whether the COMMIT landed (else it rolled back). */
export interface PipelinedCommit {
  committed: boolean;
  results: Array<{ rows: Record<string, unknown>[] } | { error: unknown }>;
}

/** One open transaction: what the body writes through, and its end. */
export interface AppTransaction {
  readonly manager: EntityManager;
  /**
   * Sends `statements` and COMMIT in one round trip (one write, one Sync), and ends the
   * transaction. A statement that fails skips those after it, the COMMIT included (the transaction
   * is then rolled back), so the last statement must fail (raise) whenever the transaction must
   * not commit. Throws CommitOutcomeUnknown when the COMMIT's own answer is lost, and a
   * serialization failure the COMMIT raised.
   */
  commitAfter(statements: WeftStatement[]): Promise<PipelinedCommit>;
  /** Rolls back (best effort) and returns the connection; safe to call after commitAfter. */
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

/**
 * The parts of node-pg's Client that batches and pipelining touch. A pg without pipeline mode
 * ignores the flag and queues the same statements one after another: the same outcome, without
 * the saving.
 */
interface PipelineClient {
  pipeline: boolean;
  _sentQueryQueue?: unknown[];
  _activeQuery?: unknown;
  _types?: unknown;
  connection?: { stream?: { cork?(): void; uncork?(): void } };
  query: (...args: unknown[]) => unknown;
  once(event: 'drain', fn: () => void): unknown;
}

/** TypeORM's QueryRunner state that a transaction opened by hand keeps true (BaseQueryRunner's). */
interface RunnerState {
  isTransactionActive: boolean;
  transactionDepth: number;
  broadcaster: { broadcast(event: string): Promise<void> };
}

/**
 * The client out of pipeline mode (node-pg refuses a custom query such as a batch in it): at once
 * when nothing it sent is unanswered, else once it is (leaving earlier would lose their answers).
 */
async function leavePipelineMode(client: PipelineClient): Promise<void> {
  if (!client.pipeline) return;
  if (client._activeQuery || (client._sentQueryQueue?.length ?? 0) > 0) await new Promise<void>((resolve) => client.once('drain', resolve));
  client.pipeline = false;
}

/**
 * Sends what `send` queues as one pipeline: every query is written before any answer is read, in
 * one write (the stream is corked), and the client leaves pipeline mode once nothing it sent is
 * unanswered (leaving it earlier would lose their answers). Pipeline mode refuses cursors and
 * streams; none is sent while it is on, except by a body that starts one concurrently with its
 * first statement.
 */
function pipelined<T extends unknown[]>(client: PipelineClient, send: () => T): T {
  const stream = client.connection?.stream;
  client.pipeline = true;
  stream?.cork?.();
  let sent: T;
  try {
    sent = send();
  } finally {
    stream?.uncork?.();
  }
  void Promise.allSettled(sent).then(() => leavePipelineMode(client));
  return sent;
}

/** The named START TRANSACTION and COMMIT of each WeftStatements, built once (a batch never changes them). */
const NAMED = new WeakMap<WeftStatements, Map<string, BatchStatement>>();

/**
 * A transaction on a query runner whose BEGIN costs no round trip of its own: it is written in
 * front of the body's first statement (or of the commit's statements, for a body that sent none):
 * one batch for the usual statement with parameters, one pipeline for anything else. The snapshot
 * is the same: PostgreSQL takes it at the first statement either way.
 */
class QueryRunnerTransaction implements AppTransaction {
  private ended = false;
  private begun = false;
  private readonly client: PipelineClient;
  /** The client's own query method, while the BEGIN waits in front of the first statement. */
  private original: PipelineClient['query'] | undefined;

  constructor(
    private readonly runner: QueryRunner,
    private readonly beginSql: string,
    private readonly pgClient: PoolClient,
    private readonly weft: WeftStatements,
    /** Called once when the connection goes back (whichever way the transaction ended). */
    private onEnd: (() => void) | undefined,
  ) {
    this.client = pgClient as unknown as PipelineClient;
  }

  get manager(): EntityManager {
    return this.runner.manager;
  }

  private get state(): RunnerState {
    return this.runner as unknown as RunnerState;
  }

  /**
   * A transaction event to the DataSource's subscribers, as TypeORM's own transaction methods
   * send it; none without subscribers (the only ones TypeORM gives these events to), where its
   * broadcaster's promise is a cost per event and nothing else.
   */
  private broadcast(event: string): Promise<void> | undefined {
    return this.runner.dataSource.subscribers.length ? this.state.broadcaster.broadcast(event) : undefined;
  }

  /**
   * Opens it: TypeORM's runner is in a transaction at once; the BEGIN goes with the first
   * statement. A promise only when the DataSource has subscribers to tell (a promise and an await
   * a step otherwise, for nothing: docs/decisions/0055).
   */
  open(): Promise<void> | undefined {
    this.state.isTransactionActive = true;
    const before = this.broadcast('BeforeTransactionStart');
    return before ? before.then(() => this.opened()) : this.opened();
  }

  private opened(): Promise<void> | undefined {
    const client = this.client;
    const original = client.query;
    this.original = original;
    client.query = (...args: unknown[]) => {
      this.restoreQuery();
      this.begun = true;
      const first = args[0] as { submit?: unknown } | undefined;
      // The usual first statement (a string with parameters, as TypeORM sends): one batch, one Sync.
      if (typeof first === 'string' && Array.isArray(args[1]) && args[1].length > 0 && args.length === 2 && !client.pipeline)
        return this.beginWith(original, first, args[1] as unknown[]);
      // A stream or a cursor keeps a portal open, which pipeline mode refuses: it waits for the BEGIN.
      if (typeof first?.submit === 'function') {
        void (original.call(client, this.beginSql) as Promise<unknown>).catch(() => undefined);
        return original.apply(client, args);
      }
      const [begin, result] = pipelined(client, () => [original.call(client, this.beginSql), original.apply(client, args)]);
      // A failed BEGIN fails the statement behind it too (the connection is gone): that one reports it.
      void (begin as Promise<unknown>).catch(() => undefined);
      return result;
    };
    this.state.transactionDepth = 1;
    return this.broadcast('AfterTransactionStart');
  }

  /**
   * The BEGIN and the body's first statement as one batch (pg-batch.ts): answered as node-pg
   * answers a query, with its result, or rejected with the statement's error (or the BEGIN's).
   */
  private async beginWith(query: PipelineClient['query'], text: string, values: unknown[]): Promise<unknown> {
    const { completed, failure } = await sendBatch(this.client, query, [this.named(this.beginSql), { text, values }]);
    const done = completed[1];
    if (!done) throw failure!.error;
    if (done.error !== undefined) throw done.error;
    return done.result;
  }

  /**
   * START TRANSACTION or COMMIT in a batch: named (parsed once per connection, where an unnamed
   * statement is parsed each time) and not described (it returns no rows), docs/decisions/0047.
   */
  private named(sql: string): BatchStatement {
    let known = NAMED.get(this.weft);
    if (!known) NAMED.set(this.weft, (known = new Map()));
    let st = known.get(sql);
    if (!st) known.set(sql, (st = { ...this.weft.config({ sql, params: [] }), describe: false }));
    return st;
  }

  async commitAfter(statements: WeftStatement[]): Promise<PipelinedCommit> {
    const client = this.client;
    const state = this.state;
    try {
      const before = this.broadcast('BeforeTransactionCommit');
      if (before) await before;
      const prepared = this.weft.prepare(this.pgClient);
      if (prepared) await prepared;
      this.ended = true;
      const query = this.original ?? client.query;
      const begin = !this.begun;
      this.restoreQuery();
      this.begun = true;
      if (client.pipeline) await leavePipelineMode(client);
      // One query, one Sync (pg-batch.ts): a statement that fails skips the rest, COMMIT included.
      const batch: BatchStatement[] = [
        ...(begin ? [this.named(this.beginSql)] : []),
        ...statements.map((st) => this.weft.config(st)),
        this.named('COMMIT'),
      ];
      const { completed, failure } = await sendBatch(client, query, batch);
      const first = begin ? 1 : 0;
      const commitAt = batch.length - 1;
      const results = statements.map((_, i): PipelinedCommit['results'][number] => {
        const done = completed[first + i];
        if (!done) return { error: failure!.error };
        return done.error === undefined ? { rows: done.rows } : { error: done.error };
      });
      state.isTransactionActive = false;
      state.transactionDepth = 0;
      const commit = completed[commitAt];
      let committed: boolean;
      if (commit)
        committed = commit.command === 'COMMIT'; // PostgreSQL answers the COMMIT of a failed transaction with ROLLBACK
      else if (failure!.kind === 'lost' || completed.length === commitAt) {
        // The connection broke, or the COMMIT itself failed: only a serialization failure the
        // server sent for the COMMIT says nothing landed; otherwise the outcome is unknown.
        if (failure!.kind === 'refused' && isSerializationFailure(failure!.error)) throw failure!.error;
        throw new CommitOutcomeUnknown(failure!.error);
      } else {
        // A statement before the COMMIT failed (or nothing was sent): nothing committed, and the
        // transaction is still open on the server (aborted): it ends before the connection goes back.
        await this.rollbackAfterBatch(query);
        committed = false;
      }
      const after = this.broadcast(committed ? 'AfterTransactionCommit' : 'AfterTransactionRollback');
      if (after) await after;
      return { committed, results };
    } finally {
      this.release();
    }
  }

  /** ROLLBACK of a batch's aborted transaction; a connection that cannot is not given back to the pool. */
  private async rollbackAfterBatch(query: PipelineClient['query']): Promise<void> {
    try {
      await (query.call(this.client, 'ROLLBACK') as Promise<unknown>);
    } catch (err) {
      await (this.runner as unknown as { releasePostgresConnection(err: unknown): Promise<void> }).releasePostgresConnection(err);
    }
  }

  async rollback(): Promise<void> {
    if (this.ended) return this.release();
    this.ended = true;
    try {
      if (!this.begun) {
        // Nothing was sent: there is nothing to roll back on the server.
        this.restoreQuery();
        this.state.isTransactionActive = false;
        this.state.transactionDepth = 0;
        await this.broadcast('AfterTransactionRollback');
      } else if (this.runner.isTransactionActive) await this.runner.rollbackTransaction();
    } catch {
      // The connection is broken or the server is away: PostgreSQL rolls the transaction back itself.
    } finally {
      this.release();
    }
  }

  /** The pooled client gets its own query method back: the BEGIN must never go to its next user. */
  private restoreQuery(): void {
    if (this.original) {
      // The instance property shadows the prototype's method: deleting it restores that one.
      delete (this.client as Partial<PipelineClient>).query;
      if (this.client.query !== this.original) this.client.query = this.original;
      this.original = undefined;
    }
  }

  /**
   * Gives the connection back. Not awaited: TypeORM's release hands the client to the pool before
   * its promise (an async function without an await), so only its rejection is left to catch.
   */
  private release(): void {
    this.restoreQuery();
    // Everything sent has been answered by now: the pooled client goes back out of pipeline mode.
    if ((this.client._sentQueryQueue?.length ?? 0) === 0) this.client.pipeline = false;
    if (!this.runner.isReleased) this.runner.release().catch(() => undefined);
    const onEnd = this.onEnd;
    this.onEnd = undefined;
    onEnd?.();
  }
}

/**
 * Opens a transaction on a fresh connection of `dataSource` (PostgreSQL's driver, whose runner
 * holds a node-pg client). `weft`: how Weft's own statements run on that connection; `onEnd`: called once when the connection goes back.
 */
export async function beginAppTransaction(
  dataSource: DataSource,
  weft: WeftStatements,
  isolation?: TransactionIsolation,
  onEnd?: () => void,
): Promise<AppTransaction> {
  const runner = dataSource.createQueryRunner();
  try {
    await runner.connect();
    const client = (runner as unknown as { databaseConnection?: PoolClient }).databaseConnection;
    if (!client) throw new Error('A transactional step needs a DataSource on PostgreSQL (the node-pg driver)');
    // As TypeORM's startTransaction: without a level of its own, the DataSource's (if set).
    const level = isolation ? TYPEORM_LEVEL[isolation] : dataSource.options.isolationLevel;
    const beginSql = level ? `START TRANSACTION ISOLATION LEVEL ${level}` : 'START TRANSACTION';
    const tx = new QueryRunnerTransaction(runner, beginSql, client, weft, onEnd);
    const opened = tx.open();
    if (opened) await opened;
    return tx;
  } catch (err) {
    await runner.release().catch(() => undefined);
    throw err;
  }
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
