// Stop policy — last one out turns off the lights (contract described in embedded-postgres.ts).
import { Client } from 'pg';
import { withFileLock } from './file-lock.js';
import { classifyPostmaster, isProcessAlive, readPostmasterPid, sleep, waitUntil } from './processes.js';
import { errMessage, setPresenceKeepsProcessAlive, type Context, type Presence } from './server.js';

const STOP_APPLICATION_NAME = 'weft-embedded-stop';
const STOP_WAIT_MS = 15_000;
/** How long connections that are being closed get to leave pg_stat_activity. */
const SETTLE_MS = 1_000;

/** Other processes' Weft connections (see the contract at the top), polled briefly to let closing ones go. */
async function countOtherWeftClients(port: number, password: string, ownPresencePid: number): Promise<number> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password,
    database: 'postgres',
    application_name: STOP_APPLICATION_NAME,
    connectionTimeoutMillis: 5000,
  });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const settleUntil = Date.now() + SETTLE_MS;
    for (;;) {
      const res = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND pid <> $1
            AND application_name LIKE 'weft%' AND application_name <> $2`,
        [ownPresencePid, STOP_APPLICATION_NAME],
      );
      const n = res.rows[0].n;
      if (n === 0 || Date.now() >= settleUntil) return n;
      await sleep(100);
    }
  } finally {
    await client.end().catch(() => undefined);
  }
}

export async function stopServer(ctx: Context, password: string, presence: Presence): Promise<void> {
  setPresenceKeepsProcessAlive(presence, true);
  await presence.client.end().catch(() => undefined);
  await withFileLock(ctx.lockPath, Date.now() + STOP_WAIT_MS, async () => {
    const pm = readPostmasterPid(ctx.dataDir);
    if (!pm || classifyPostmaster(pm.pid, ctx.dataDir) !== 'ours' || !pm.port) {
      ctx.log('the embedded PostgreSQL is not running');
      return;
    }
    let others: number;
    try {
      others = await countOtherWeftClients(pm.port, password, presence.backendPid);
    } catch (err) {
      ctx.log(`leaving the embedded PostgreSQL running: could not check who uses it (${errMessage(err)})`);
      return;
    }
    if (others > 0) {
      ctx.log(`leaving the embedded PostgreSQL running: ${others} other Weft connection(s) still use it`);
      return;
    }
    ctx.log(`stopping the embedded PostgreSQL (pid ${pm.pid})`);
    try {
      process.kill(pm.pid, 'SIGINT'); // fast shutdown: roll back open transactions, checkpoint, exit
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ESRCH') return;
      throw err;
    }
    if (await waitUntil(() => !isProcessAlive(pm.pid), Date.now() + STOP_WAIT_MS, 50)) ctx.log('embedded PostgreSQL stopped');
    else ctx.log(`the embedded PostgreSQL (pid ${pm.pid}) did not stop within ${STOP_WAIT_MS} ms; it was left to finish on its own`);
  });
}
