import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { waitFor } from '../../../../test/support/engine.js';
import { StartupKillProxy } from '../../../../test/support/startup-kill-proxy.js';
import { openDatabase, OpenedDatabase } from './data-source.js';

// A connection whose backend the server ends as its startup completes (a fast shutdown, an
// operator's pg_terminate_backend): node-pg hands it out and parses the FATAL in the same socket
// event, before whoever checked it out listens for its errors. Unguarded, that killed the process
// (an engine of a chaos soak exited 70 on it during a PostgreSQL restart; docs/decisions/0067).
describe('a pooled connection ended as it opens', () => {
  let tdb: TestDatabase;
  let proxy: StartupKillProxy;
  const crashes: unknown[] = [];
  const onCrash = (err: unknown) => crashes.push(err);
  beforeAll(async () => {
    tdb = await createTestDatabase();
    proxy = await StartupKillProxy.start(tdb.url, tdb.url);
    process.on('uncaughtException', onCrash);
  });
  afterAll(async () => {
    process.off('uncaughtException', onCrash);
    await proxy?.close();
    await tdb?.drop();
  });
  beforeEach(() => void (crashes.length = 0));

  /** Ends the pool's idle connections, so the next checkout opens one, which the proxy ends as it opens. */
  async function nextConnectionEndsAtStartup(db: OpenedDatabase): Promise<void> {
    await tdb.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [tdb.name]);
    await waitFor(() => db.sql.pool.totalCount === 0, 'the pool has dropped its killed connections');
    proxy.arm();
  }

  /** The checkout failed without crashing the process, and the pool serves the next statements. */
  async function survives(db: OpenedDatabase, checkout: () => Promise<unknown>): Promise<void> {
    const killedBefore = proxy.killed;
    await nextConnectionEndsAtStartup(db);
    await expect(checkout()).rejects.toThrow(/terminat|not queryable|Connection/i);
    expect(proxy.killed).toBe(killedBefore + 1);
    // The failure surfaces after the socket's events have run: give them a turn to crash the process.
    await new Promise((r) => setImmediate(r));
    expect(crashes).toEqual([]);
    for (let i = 0; i < 5; i++) await expect(db.sql.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
  }

  describe("on the engine's own pool", () => {
    let db: OpenedDatabase;
    beforeAll(async () => {
      db = await openDatabase({ database: { url: proxy.url(tdb.url) }, schema: 'weft' });
    });
    afterAll(async () => db?.close());

    it("a transaction's checkout (SqlClient.transaction)", async () => {
      await survives(db, () => db.sql.transaction((client) => client.query('SELECT 1')));
    });

    it("a transactional step's connection (TypeORM's query runner)", async () => {
      await survives(db, async () => {
        const tx = await db.sql.beginAppTransaction();
        try {
          await tx.manager.query('SELECT 1');
        } finally {
          await tx.rollback();
        }
      });
    });
  });

  describe('on a DataSource the application gives Weft', () => {
    let given: DataSource;
    let db: OpenedDatabase;
    beforeAll(async () => {
      given = new DataSource({ type: 'postgres', url: proxy.url(tdb.url), extra: { max: 4 } });
      db = await openDatabase({ database: given, schema: 'weft' });
    });
    afterAll(async () => {
      await db?.close();
      if (given?.isInitialized) await given.destroy();
    });

    it("the engine's checkouts from it", async () => {
      await survives(db, () => db.sql.transaction((client) => client.query('SELECT 1')));
    });
  });
});
