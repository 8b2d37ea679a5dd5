// Process and postmaster.pid helpers for the embedded PostgreSQL (Linux-first: /proc is used
// when present, with plain signal-0 liveness as the fallback elsewhere).
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `intervalMs` until it returns true or `deadline` (epoch ms) passes. */
export async function waitUntil(check: () => boolean | Promise<boolean>, deadline: number, intervalMs = 50): Promise<boolean> {
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(Math.min(intervalMs, Math.max(1, deadline - Date.now())));
  }
}

function procStatFields(pid: number): string[] | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ..." — comm may contain spaces and parentheses.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

/** True if `pid` names a live process (EPERM counts as alive; zombies count as dead). */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const fields = procStatFields(pid);
  return !(fields && (fields[0] === 'Z' || fields[0] === 'X'));
}

/** Kernel start time of `pid` (clock ticks since boot), to tell a pid apart from a reused one. */
export function processStartTime(pid: number): string | null {
  const fields = procStatFields(pid);
  return fields?.[19] ?? null; // field 22 of /proc/<pid>/stat
}

export interface PostmasterPid {
  pid: number;
  /** Line 4; absent while the server is still writing the file. */
  port: number | null;
  /** Line 8: 'starting' | 'ready' | 'stopping' | 'standby'; null if not written yet. */
  status: string | null;
}

/** Parses `<dataDir>/postmaster.pid`; null when it does not exist or names no pid yet. */
export function readPostmasterPid(dataDir: string): PostmasterPid | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8');
  } catch {
    return null;
  }
  const lines = text.split('\n').map((l) => l.trim());
  const pid = Number.parseInt(lines[0] ?? '', 10);
  if (!Number.isInteger(pid) || pid <= 0) return null;
  const port = Number.parseInt(lines[3] ?? '', 10);
  return { pid, port: Number.isInteger(port) && port > 0 ? port : null, status: lines[7] || null };
}

/**
 * What the pid in postmaster.pid is:
 * - 'ours':    a live postmaster serving this data directory (its cwd is the data dir — the
 *              postmaster chdir()s there — or, where /proc/<pid>/cwd is unreadable, its command
 *              line mentions postgres);
 * - 'foreign': a live process that is not that postmaster (the pid was reused, e.g. after a
 *              container restart);
 * - 'dead':    no such process. PostgreSQL itself recovers from such a stale file, and also
 *              checks the old shared-memory segment it names, so the file is left for it.
 */
export function classifyPostmaster(pid: number, dataDir: string): 'ours' | 'foreign' | 'dead' {
  if (!isProcessAlive(pid)) return 'dead';
  let realDataDir = dataDir;
  try {
    realDataDir = fs.realpathSync(dataDir);
  } catch {
    // keep the given path
  }
  try {
    return fs.readlinkSync(`/proc/${pid}/cwd`) === realDataDir ? 'ours' : 'foreign';
  } catch {
    // not Linux, or not permitted: fall back to the command line, then to liveness alone
  }
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('postgres') ? 'ours' : 'foreign';
  } catch {
    return 'ours';
  }
}

/** A port that was free on 127.0.0.1 a moment ago (the caller retries if it is taken meanwhile). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not pick a free loopback port'))));
    });
  });
}

/** The last `maxLines` lines written to `file` at or after byte `fromOffset`. */
export function tailOfFile(file: string, fromOffset = 0, maxLines = 12): string {
  try {
    const size = fs.statSync(file).size;
    const start = Math.max(fromOffset, size - 8192);
    if (size <= start) return '';
    const fd = fs.openSync(file, 'r');
    try {
      const buf = Buffer.alloc(size - start);
      fs.readSync(fd, buf, 0, buf.length, start);
      return buf.toString('utf8').trimEnd().split('\n').slice(-maxLines).join('\n');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}
