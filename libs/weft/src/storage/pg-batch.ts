// Several statements sent to node-pg as one query that ends in one Sync (docs/decisions/0044): one
// write, one answer read, one ReadyForQuery and one callback, where a query each costs a Sync, a
// flush on the server, a ReadyForQuery, a promise and a result each. The server skips everything
// after a statement that fails up to the Sync, so nothing after a refused statement runs: a batch
// ending in COMMIT commits only if every statement before it succeeded.
import pg from 'pg';
// A static import, not createRequire(import.meta.url): a CommonJS consumer's jest (ts-jest) turns
// this package into CommonJS, where import.meta cannot be.
import pgUtils from 'pg/lib/utils.js';

/** One statement of a batch. */
export interface BatchStatement {
  /** A prepared statement's name (parsed once per connection); none: the unnamed statement, parsed each time. */
  name?: string;
  text: string;
  values?: unknown[];
  /** false: no Describe (a statement that returns no rows, as START TRANSACTION and COMMIT): its answer is its CommandComplete alone. */
  describe?: boolean;
}

/** What the server answered for one completed statement. */
export interface BatchResult {
  /** The command tag's verb (`UPDATE`, `SELECT`, `COMMIT`, or `ROLLBACK` for the COMMIT of a failed transaction). */
  command: string | null;
  rows: Record<string, unknown>[];
  /** node-pg's own result object, as a query of this statement alone would have answered. */
  result: pg.Result;
  /** A row the client could not parse (a type parser threw); the statement itself completed. */
  error?: unknown;
}

/**
 * How a batch ended: the statements the server completed, in order (a prefix of the batch), and
 * why the rest did not. `refused`: the server answered the next statement with an error and
 * skipped those after it (the connection is usable; an open transaction is aborted). `lost`: the
 * connection broke (what the server did with the rest is unknown). `unsent`: nothing was written.
 */
export interface BatchOutcome {
  completed: BatchResult[];
  failure?: { kind: 'refused' | 'lost' | 'unsent'; error: unknown };
}

/** The parts of node-pg's Connection a batch writes with (the same calls its Query makes). */
interface WireConnection {
  parsedStatements: Record<string, string>;
  submittedNamedStatements: Record<string, string>;
  stream: { cork?(): void; uncork?(): void };
  parse(msg: { text: string; name?: string }): void;
  bind(msg: { statement?: string; values: unknown[] }): void;
  describe(msg: { type: 'P'; name: string }): void;
  execute(msg: { portal: string }): void;
  sync(): void;
  sendCopyFail(message: string): void;
  on(event: 'parseComplete', fn: () => void): unknown;
  removeListener(event: 'parseComplete', fn: () => void): unknown;
}

/** The text a named statement was parsed (or sent to be parsed) with on this connection; none: parse it. */
const knownText = (connection: WireConnection, name: string | undefined): string | undefined =>
  !name ? undefined : (connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]);

/**
 * A named statement's rows as its first Describe on a connection told (pg's Result state after
 * addFields): its later uses go without a Describe, their rows parsed with this (docs/decisions/0055).
 * A prepared statement's row shape never changes (PostgreSQL refuses a replan that would change it:
 * "cached plan must not change result type"); a statement parsed again is described again.
 */
interface RowShape {
  text: string;
  fields: unknown[];
  parsers: unknown[] | undefined;
  empty: Record<string, null> | null;
}

/** pg's Result internals a shape is read from and given to (pg 8's lib/result.js). */
interface ResultInternals {
  fields: unknown[];
  _parsers: unknown[] | undefined;
  _prebuiltEmptyResultObject: Record<string, null> | null;
  addFields(fields: unknown[]): void;
}

/** Per connection: each named statement's row shape, by name. */
const SHAPES = new WeakMap<WireConnection, Map<string, RowShape>>();

/** node-pg's own value conversion for bound parameters (Dates, arrays, objects, toPostgres). */
const { prepareValue } = pgUtils;

/** A server's ErrorResponse, as node-pg hands it over (pg-protocol's DatabaseError), not a socket's error. */
const answeredByServer = (err: unknown): boolean => {
  const e = err as { severity?: unknown; code?: unknown } | undefined;
  return typeof e?.severity === 'string' && typeof e.code === 'string';
};

/** The column types' parsers of the client, as node-pg's Query gets them. */
type Types = ConstructorParameters<typeof pg.Result>[1];

/**
 * A node-pg Submittable: the client treats it as one query (it refuses custom queries in pipeline
 * mode, so the client must not be in it) and routes every message of its answer here.
 */
class SyncedBatch {
  callback: ((err: Error | null, outcome?: BatchOutcome) => void) | undefined;
  private readonly completed: BatchResult[] = [];
  private result: pg.Result;
  private parseError: unknown;
  /**
   * Every Parse this batch sent, in order, until its ParseComplete comes back: a named one's name,
   * undefined for the unnamed statement (whose ParseComplete comes back all the same).
   */
  private readonly parsing: Array<string | undefined> = [];
  private named = 0;
  private connection: WireConnection | undefined;
  /** Per statement: the row shape it is sent without a Describe for; undefined: it is described (or returns no rows). */
  private shapes: Array<RowShape | undefined> = [];
  private sent = false;
  private done = false;

  constructor(
    /** Public for what counts statements per query (bench/support.ts's StatementCounter). */
    readonly statements: BatchStatement[],
    private readonly types: Types | undefined,
    callback: (outcome: BatchOutcome) => void,
  ) {
    this.result = new pg.Result('', types as Types);
    this.callback = (err, outcome) => callback(err ? this.failed('lost', err) : outcome!);
  }

  /** Written in one go: parameters converted first, so a conversion that throws writes nothing. */
  submit(connection: WireConnection): Error | null {
    this.connection = connection;
    let values: unknown[][];
    // What each named statement was parsed with on this connection: undefined, it is parsed here.
    const known = this.statements.map((st) => knownText(connection, st.name));
    try {
      this.statements.forEach((st, i) => {
        if (known[i] !== undefined && known[i] !== st.text)
          throw new Error(`Prepared statements must be unique - '${st.name}' was used for a different statement`);
      });
      values = this.statements.map((st) => (st.values ?? []).map((v) => prepareValue(v)));
    } catch (err) {
      return err as Error; // the client hands it to handleError; nothing was written
    }
    const shapes = SHAPES.get(connection);
    connection.stream.cork?.();
    try {
      this.statements.forEach((st, i) => {
        // (A name twice in one batch is parsed at its first use only.)
        if (known[i] === undefined && knownText(connection, st.name) === undefined) {
          connection.parse({ text: st.text, name: st.name });
          this.parsing.push(st.name);
          if (st.name) {
            connection.submittedNamedStatements[st.name] = st.text;
            this.named++;
          }
        }
        connection.bind({ statement: st.name, values: values[i] });
        // Parsed before this batch with the same text, and described then: its rows' shape is known.
        const shape = known[i] === st.text ? shapes?.get(st.name!) : undefined;
        this.shapes[i] = shape?.text === st.text ? shape : undefined;
        if (st.describe !== false && !this.shapes[i]) connection.describe({ type: 'P', name: '' });
        connection.execute({ portal: '' });
      });
      connection.sync();
      this.sent = true;
    } finally {
      connection.stream.uncork?.();
    }
    if (this.named) connection.on('parseComplete', this.parsed);
    this.shapeNext();
    return null;
  }

  /** The next statement's result, shaped already when it goes without a Describe. */
  private shapeNext(): void {
    const shape = this.shapes[this.completed.length];
    if (!shape) return;
    const result = this.result as unknown as ResultInternals;
    result.fields = shape.fields;
    result._parsers = shape.parsers;
    result._prebuiltEmptyResultObject = shape.empty;
  }

  /** The client's own ParseComplete handler reads a query's single name; a batch keeps its names itself. */
  private readonly parsed = () => {
    const name = this.parsing.shift();
    const connection = this.connection!;
    if (name !== undefined) {
      connection.parsedStatements[name] = connection.submittedNamedStatements[name];
      delete connection.submittedNamedStatements[name];
      if (--this.named === 0) connection.removeListener('parseComplete', this.parsed);
    }
  };

  handleRowDescription(msg: { fields: unknown[] }): void {
    const result = this.result as unknown as ResultInternals;
    result.addFields(msg.fields);
    // A named statement's first Describe on this connection: its later uses go without one.
    const st = this.statements[this.completed.length];
    const connection = this.connection;
    // Only where pg's Result is as this reads it (pg 8.23's); another version's is described each time.
    const internal = Array.isArray(result._parsers) && typeof result._prebuiltEmptyResultObject === 'object';
    if (st?.name && connection && internal) {
      let shapes = SHAPES.get(connection);
      if (!shapes) SHAPES.set(connection, (shapes = new Map()));
      shapes.set(st.name, { text: st.text, fields: result.fields, parsers: result._parsers, empty: result._prebuiltEmptyResultObject });
    }
  }

  handleDataRow(msg: { fields: unknown[] }): void {
    if (this.parseError !== undefined) return;
    const result = this.result as unknown as { parseRow(fields: unknown[]): Record<string, unknown>; addRow(row: unknown): void };
    try {
      result.addRow(result.parseRow(msg.fields));
    } catch (err) {
      this.parseError = err;
    }
  }

  handleCommandComplete(msg: { text: string }): void {
    (this.result as unknown as { addCommandComplete(msg: { text: string }): void }).addCommandComplete(msg);
    const done: BatchResult = { command: this.result.command, rows: this.result.rows, result: this.result };
    if (this.parseError !== undefined) done.error = this.parseError;
    this.completed.push(done);
    this.result = new pg.Result('', this.types as Types);
    this.parseError = undefined;
    this.shapeNext();
  }

  handleEmptyQuery(): void {
    this.handleCommandComplete({ text: '' });
  }

  /** A server's error for the statement after the completed ones (the rest skipped), or the connection's. */
  handleError(err: unknown): void {
    this.finish(this.failed(!this.sent ? 'unsent' : answeredByServer(err) ? 'refused' : 'lost', err));
  }

  handleReadyForQuery(): void {
    if (this.completed.length === this.statements.length) this.finish({ completed: this.completed });
    else
      this.finish(
        this.failed('lost', new Error(`The server answered ${this.completed.length} of ${this.statements.length} statements of a batch`)),
      );
  }

  handlePortalSuspended(): void {
    // Never asked for: every Execute fetches all rows.
  }

  handleCopyInResponse(connection: WireConnection): void {
    connection.sendCopyFail('A batch sends no COPY data');
  }

  handleCopyData(): void {
    // Never asked for.
  }

  private failed(kind: 'refused' | 'lost' | 'unsent', error: unknown): BatchOutcome {
    return { completed: this.completed, failure: { kind, error } };
  }

  private finish(outcome: BatchOutcome): void {
    if (this.done) return;
    this.done = true;
    const connection = this.connection;
    if (connection && this.named) {
      // Never parsed (refused, or skipped after an error): parsed again on their next use.
      for (const name of this.parsing) if (name !== undefined) delete connection.submittedNamedStatements[name];
      this.parsing.length = 0;
      this.named = 0;
      connection.removeListener('parseComplete', this.parsed);
    }
    this.callback?.(null, outcome);
  }
}

/** The parts of node-pg's Client a batch is sent with. */
export interface BatchClient {
  _types?: unknown;
}

/**
 * Sends `statements` as one query on `client` through `query` (the client's query method; the
 * client must not be in pipeline mode). Never rejects: the outcome says what completed.
 */
export function sendBatch(
  client: BatchClient,
  query: (submittable: unknown) => unknown,
  statements: BatchStatement[],
): Promise<BatchOutcome> {
  return new Promise((resolve) => {
    query.call(client, new SyncedBatch(statements, client._types as Types | undefined, resolve));
  });
}
