// The LISTEN connection is a pool client. A reconnect still connecting when the engine shuts down
// (after a database outage, on a loaded machine) must hand its client back: kept, it was never
// released and the pool's end, the last step of dispose(), waited for it forever (seen once as a
// 60 s hook timeout in commit-failures.spec.ts under CI load).
import { Client } from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WeftEngine } from './engine.js';

const listenerPid = async (url: string): Promise<number | undefined> => {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    const r = await c.query<{ pid: number }>(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`,
    );
    return r.rows[0]?.pid;
  } finally {
    await c.end();
  }
};

describe('the LISTEN connection at shutdown (real PostgreSQL)', () => {
  const env = useTestEngines({ disposeAfterEach: false });

  it('a reconnect that finishes connecting after dispose() began gives its client back, and dispose() ends', async () => {
    const engine: WeftEngine = await env.pool.create({});
    await engine.bootstrap();
    const pool = engine.database.sql.pool;
    await waitFor(async () => (await listenerPid(env.tdb.url)) !== undefined, 'the LISTEN connection');

    // The reconnect's pool.connect() is held until dispose() has closed the messaging. Only a
    // call without a callback is the LISTEN one: pool.query() checks clients out with one.
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    let connected: Promise<unknown> | undefined;
    const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
    (pool as unknown as { connect: (...args: unknown[]) => unknown }).connect = (...args: unknown[]) => {
      if (args.length > 0 || connected) return connect(...args);
      connected = gate.then(() => connect());
      return connected;
    };
    // It connects the moment the messaging has closed, before dispose() goes on to end the pool.
    const messaging = (engine as unknown as { messaging: { close(): Promise<void> } }).messaging;
    const close = messaging.close.bind(messaging);
    messaging.close = async () => {
      await close();
      open();
      await connected?.catch(() => undefined);
    };
    await env.tdb.query('SELECT pg_terminate_backend($1)', [await listenerPid(env.tdb.url)]);
    await waitFor(() => connected !== undefined, 'the reconnect to start connecting');

    const disposed = engine.dispose();
    const deadline = new Promise<'hung'>((resolve) => setTimeout(() => resolve('hung'), 10_000).unref());
    expect(await Promise.race([disposed.then(() => 'disposed'), deadline])).toBe('disposed');
    expect(pool.totalCount).toBe(0);
  });
});
