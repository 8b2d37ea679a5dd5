import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { waitFor } from '../../../../test/support/engine.js';
import { openDatabase, OpenedDatabase } from './data-source.js';

describe('SqlClient.transaction when the database kills its connection', () => {
  let tdb: TestDatabase;
  let db: OpenedDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    db = await openDatabase({ database: { url: tdb.url }, schema: 'weft' });
  });
  afterAll(async () => {
    await db?.close();
    await tdb?.drop();
  });

  it('rejects, does not crash the process, and gives the pool no broken connection back', async () => {
    const crashes: unknown[] = [];
    const onCrash = (err: unknown) => crashes.push(err);
    process.on('uncaughtException', onCrash);
    try {
      const outcome = db.sql.transaction(async (client) => {
        const [{ pid }] = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows;
        // Idle in the transaction while an operator (or a restart) terminates the backend.
        await tdb.query('SELECT pg_terminate_backend($1)', [pid]);
        await waitFor(async () => (await tdb.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1`, [pid])).length === 0, 'backend gone');
        await new Promise((r) => setTimeout(r, 50)); // let the socket's close reach the client
        await client.query('SELECT 1');
      });
      await expect(outcome).rejects.toThrow(/terminat|Connection/i);
      expect(crashes).toEqual([]);
      // The pool still works: the dead client was destroyed, not reused.
      for (let i = 0; i < 12; i++) await expect(db.sql.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    } finally {
      process.off('uncaughtException', onCrash);
    }
  });
});
