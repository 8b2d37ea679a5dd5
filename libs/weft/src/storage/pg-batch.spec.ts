import pg from 'pg';
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { waitFor } from '../../../../test/support/engine.js';
import { CommitOutcomeUnknown } from './app-transaction.js';
import { openDatabase, OpenedDatabase } from './data-source.js';
import { sendBatch, type BatchStatement } from './pg-batch.js';

type Wire = { parsedStatements: Record<string, string>; submittedNamedStatements: Record<string, string> };
const wire = (c: pg.Client) => (c as unknown as { connection: Wire }).connection;
const batch = (c: pg.Client, statements: BatchStatement[]) => sendBatch(c as never, c.query as never, statements);

describe('one query, one Sync: a batch of statements (real PostgreSQL)', () => {
  let tdb: TestDatabase;
  let client: pg.Client;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    await tdb.query('CREATE TABLE batch_rows (n int PRIMARY KEY)');
  });
  beforeEach(async () => {
    client = new pg.Client({ connectionString: tdb.url });
    client.on('error', () => undefined);
    await client.connect();
    await client.query('TRUNCATE batch_rows');
  });
  afterEach(async () => {
    await client.end().catch(() => undefined);
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it("answers every statement's rows, parsed by the client's types, and keeps a named statement prepared", async () => {
    const named = { name: 'batch_spec_sum', text: 'SELECT $1::int + $2::int AS sum, $3::jsonb AS doc' };
    const out = await batch(client, [
      { text: 'BEGIN' },
      { ...named, values: [1, 2, JSON.stringify({ a: [1] })] },
      { text: 'INSERT INTO batch_rows (n) VALUES ($1), ($2)', values: [1, 2] },
      { text: 'COMMIT' },
    ]);
    expect(out.failure).toBeUndefined();
    expect(out.completed.map((r) => r.command)).toEqual(['BEGIN', 'SELECT', 'INSERT', 'COMMIT']);
    expect(out.completed[1].rows).toEqual([{ sum: 3, doc: { a: [1] } }]);
    expect(wire(client).parsedStatements[named.name]).toBe(named.text);
    // Used again: bound without a Parse (a second Parse of the name would fail).
    const again = await batch(client, [{ ...named, values: [2, 3, null] }]);
    expect(again.completed[0].rows).toEqual([{ sum: 5, doc: null }]);
    expect((await tdb.query<{ n: number }>('SELECT n FROM batch_rows ORDER BY n')).map((r) => r.n)).toEqual([1, 2]);
  });

  it("a named statement is described at its first use on a connection only: later uses' rows parsed by that shape", async () => {
    const named = { name: 'batch_spec_shape', text: 'SELECT $1::int + 1 AS n, $2::jsonb AS doc, $3::text AS t' };
    const connection = (client as unknown as { connection: { describe(...args: unknown[]): void } }).connection;
    const describe = connection.describe;
    let described = 0;
    connection.describe = function (this: unknown, ...args: unknown[]) {
      described++;
      return describe.apply(this, args);
    };
    const first = await batch(client, [{ ...named, values: [1, '{"a":1}', 'x'] }]);
    expect(first.completed[0].rows).toEqual([{ n: 2, doc: { a: 1 }, t: 'x' }]);
    expect(described).toBe(1);
    // Twice in one batch, beside an unnamed statement (described each time) and a null.
    const again = await batch(client, [
      { ...named, values: [2, null, 'y'] },
      { text: 'SELECT $1::int AS m', values: [7] },
      { ...named, values: [3, '[2]', null] },
    ]);
    expect(again.completed.map((r) => r.rows)).toEqual([[{ n: 3, doc: null, t: 'y' }], [{ m: 7 }], [{ n: 4, doc: [2], t: null }]]);
    expect(again.completed[0].result.fields.map((f) => f.name)).toEqual(['n', 'doc', 't']);
    expect(described).toBe(2);
    // Parsed again (the connection forgot it): described again.
    await client.query(`DEALLOCATE ${named.name}`);
    delete wire(client).parsedStatements[named.name];
    const reparsed = await batch(client, [{ ...named, values: [4, '{}', 'z'] }]);
    expect(reparsed.completed[0].rows).toEqual([{ n: 5, doc: {}, t: 'z' }]);
    expect(described).toBe(3);
  });

  it('named START TRANSACTION and COMMIT without a Describe: answered by their command tags, parsed once', async () => {
    const begin = { name: 'batch_spec_begin', text: 'START TRANSACTION', describe: false };
    const commit = { name: 'batch_spec_commit', text: 'COMMIT', describe: false };
    for (const n of [1, 2]) {
      const out = await batch(client, [begin, { text: 'INSERT INTO batch_rows (n) VALUES ($1) RETURNING n', values: [n] }, commit]);
      expect(out.failure).toBeUndefined();
      expect(out.completed.map((r) => [r.command, r.rows])).toEqual([
        ['START', []],
        ['INSERT', [{ n }]],
        ['COMMIT', []],
      ]);
    }
    expect(wire(client).parsedStatements[commit.name]).toBe('COMMIT');
    // A name twice in one batch, not yet parsed on the connection: parsed at its first use only.
    const twice = { name: 'batch_spec_twice', text: 'SELECT $1::int AS n' };
    const both = await batch(client, [
      { ...twice, values: [1] },
      { ...twice, values: [2] },
    ]);
    expect(both.failure).toBeUndefined();
    expect(both.completed.map((r) => r.rows)).toEqual([[{ n: 1 }], [{ n: 2 }]]);
    expect((await tdb.query<{ n: number }>('SELECT n FROM batch_rows ORDER BY n')).map((r) => r.n)).toEqual([1, 2]);
  });

  it('a statement that fails skips the rest up to the Sync: the COMMIT never runs, the transaction waits aborted', async () => {
    const skipped = { name: 'batch_spec_skipped', text: 'SELECT $1::int AS n' };
    const parsedFirst = { name: 'batch_spec_first', text: 'SELECT $1::int AS m' };
    const out = await batch(client, [
      { text: 'BEGIN' },
      { ...parsedFirst, values: [7] },
      { text: 'INSERT INTO batch_rows (n) VALUES ($1)', values: [1] },
      { text: 'SELECT 1 / 0' },
      { ...skipped, values: [1] },
      { text: 'INSERT INTO batch_rows (n) VALUES ($1)', values: [2] },
      { text: 'COMMIT' },
    ]);
    expect(out.completed.map((r) => r.command)).toEqual(['BEGIN', 'SELECT', 'INSERT']);
    expect(out.failure).toMatchObject({ kind: 'refused', error: { code: '22012' } });
    await expect(client.query('SELECT 1')).rejects.toMatchObject({ code: '25P02' }); // in the aborted transaction
    // The statement parsed before the error stays known; the skipped one is parsed on its next use.
    expect(wire(client).parsedStatements[parsedFirst.name]).toBe(parsedFirst.text);
    expect(wire(client).parsedStatements[skipped.name]).toBeUndefined();
    expect(wire(client).submittedNamedStatements[skipped.name]).toBeUndefined();
    await client.query('ROLLBACK');
    const next = await batch(client, [
      { ...parsedFirst, values: [8] },
      { ...skipped, values: [9] },
    ]);
    expect(next.failure).toBeUndefined();
    expect(next.completed.map((r) => r.rows)).toEqual([[{ m: 8 }], [{ n: 9 }]]);
    expect(await tdb.query('SELECT n FROM batch_rows')).toEqual([]);
  });

  it('the COMMIT of a transaction that failed before the batch answers ROLLBACK', async () => {
    await client.query('BEGIN');
    await client.query('INSERT INTO batch_rows (n) VALUES (1)');
    await expect(client.query('SELECT 1 / 0')).rejects.toThrow(/division by zero/);
    const out = await batch(client, [{ text: 'COMMIT' }]);
    expect(out.failure).toBeUndefined();
    expect(out.completed[0].command).toBe('ROLLBACK');
    expect(await tdb.query('SELECT n FROM batch_rows')).toEqual([]);
  });

  it('a connection that breaks mid-batch: lost, with what completed before it', async () => {
    const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
    const sent = batch(client, [{ text: 'BEGIN' }, { text: 'SELECT 1 AS one' }, { text: 'SELECT pg_sleep(30)' }, { text: 'COMMIT' }]);
    await waitForState(tdb, pid, 'SELECT pg_sleep(30)');
    (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const out = await sent;
    expect(out.failure?.kind).toBe('lost');
    expect(out.completed.length).toBeLessThan(4);
  });

  it('a parameter that cannot be converted: nothing is sent', async () => {
    const bad = {
      toPostgres: () => {
        throw new Error('no conversion');
      },
    };
    const out = await batch(client, [
      { text: 'INSERT INTO batch_rows (n) VALUES ($1)', values: [1] },
      { text: 'SELECT $1::text', values: [bad] },
    ]);
    expect(out).toMatchObject({ completed: [], failure: { kind: 'unsent' } });
    await expect(client.query('SELECT 1 AS one')).resolves.toMatchObject({ rows: [{ one: 1 }] });
    expect(await tdb.query('SELECT n FROM batch_rows')).toEqual([]);
  });
});

describe("a transactional step's commit as one batch (AppTransaction.commitAfter, real PostgreSQL)", () => {
  let tdb: TestDatabase;
  let db: OpenedDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = await openDatabase({ database: { url: tdb.url }, schema: 'weft' });
    await tdb.query('CREATE TABLE tx_rows (n int PRIMARY KEY)');
  });
  afterAll(async () => {
    await db?.close();
    await tdb?.drop();
  });
  const rows = async () => (await tdb.query<{ n: number }>('SELECT n FROM tx_rows ORDER BY n')).map((r) => r.n);
  const poolWorks = async () => {
    for (let i = 0; i < 12; i++) await expect(db.sql.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  };

  it("commits the body's writes with the statements when all succeed", async () => {
    const tx = await db.sql.beginAppTransaction();
    await tx.manager.query('INSERT INTO tx_rows (n) VALUES ($1)', [1]);
    const out = await tx.commitAfter([{ sql: 'SELECT $1::int AS n', params: [5] }]);
    expect(out).toEqual({ committed: true, results: [{ rows: [{ n: 5 }] }] });
    expect(await rows()).toEqual([1]);
    await tdb.query('TRUNCATE tx_rows');
  });

  it('a statement that fails: nothing commits, the statement after it reports the same error, the connection goes back clean', async () => {
    const tx = await db.sql.beginAppTransaction();
    await tx.manager.query('INSERT INTO tx_rows (n) VALUES ($1)', [2]);
    const out = await tx.commitAfter([
      { sql: 'SELECT $1::int AS n', params: [1] },
      { sql: 'SELECT 1 / $1::int AS n', params: [0] },
      { sql: 'SELECT $1::int AS n', params: [3] },
    ]);
    expect(out.committed).toBe(false);
    expect(out.results[0]).toEqual({ rows: [{ n: 1 }] });
    expect(out.results[1]).toMatchObject({ error: { code: '22012' } });
    expect(out.results[2]).toEqual(out.results[1]);
    expect(await rows()).toEqual([]);
    await poolWorks();
  });

  it('a body that swallowed its own error: the first statement is refused and nothing commits', async () => {
    const tx = await db.sql.beginAppTransaction();
    await tx.manager.query('INSERT INTO tx_rows (n) VALUES ($1)', [3]);
    await expect(tx.manager.query('SELECT 1 / 0')).rejects.toThrow(/division by zero/);
    const out = await tx.commitAfter([{ sql: 'SELECT $1::int AS n', params: [1] }]);
    expect(out).toMatchObject({ committed: false, results: [{ error: { code: '25P02' } }] });
    expect(await rows()).toEqual([]);
    await poolWorks();
  });

  it('a body that sent nothing: its BEGIN goes in the batch', async () => {
    const tx = await db.sql.beginAppTransaction('serializable');
    const out = await tx.commitAfter([{ sql: 'SELECT current_setting($1) AS level', params: ['transaction_isolation'] }]);
    expect(out).toEqual({ committed: true, results: [{ rows: [{ level: 'serializable' }] }] });
  });

  it('a connection that breaks before the COMMIT answers: CommitOutcomeUnknown, and the pool gets no broken connection', async () => {
    const tx = await db.sql.beginAppTransaction();
    await tx.manager.query('INSERT INTO tx_rows (n) VALUES ($1)', [4]);
    const [{ pid }] = (await tx.manager.query('SELECT pg_backend_pid() AS pid')) as Array<{ pid: number }>;
    const committing = tx.commitAfter([{ sql: 'SELECT pg_sleep($1::float8)', params: [30] }]);
    await waitForState(tdb, pid, 'SELECT pg_sleep($1::float8)');
    const conn = (tx.manager.queryRunner as unknown as { databaseConnection: { connection: { stream: { destroy(): void } } } })
      .databaseConnection;
    conn.connection.stream.destroy();
    const err = await committing.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CommitOutcomeUnknown);
    expect(await rows()).toEqual([]);
    await poolWorks();
  });
});

/** Until backend `pid` runs `query` (the batch reached that statement). */
const waitForState = (tdb: TestDatabase, pid: number, query: string) =>
  waitFor(
    async () =>
      (await tdb.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND state = 'active' AND query = $2`, [pid, query])).length > 0,
    `backend ${pid} running ${query}`,
  );
