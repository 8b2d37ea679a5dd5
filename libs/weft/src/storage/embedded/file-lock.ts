// An exclusive lock file shared by every process that uses the same embedded data directory.
// It is held only around short critical sections (check → initdb → start, and stop), never for
// the life of a process, so a crashed holder is the only way a lock goes stale.
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { isProcessAlive, processStartTime, sleep } from './processes.js';

interface LockOwner {
  pid: number;
  start: string | null;
}

export class LockTimeoutError extends Error {
  constructor(
    readonly lockPath: string,
    readonly holder: string,
  ) {
    super(`timed out waiting for the lock ${lockPath} (held by ${holder})`);
  }
}

/** In-process queue per lock path: the file lock cannot tell two callers in one process apart. */
const queues = new Map<string, Promise<void>>();

function parseOwner(text: string): LockOwner | null {
  try {
    const o = JSON.parse(text) as Partial<LockOwner>;
    return typeof o.pid === 'number' ? { pid: o.pid, start: typeof o.start === 'string' ? o.start : null } : null;
  } catch {
    return null;
  }
}

/**
 * A holder is alive if its pid runs and (on Linux) still has the start time recorded in the lock,
 * so a pid reused after a crash or a container restart does not keep the lock forever. Our own
 * pid never holds it here: the in-process queue serialises callers before they touch the file.
 */
function ownerAlive(owner: LockOwner): boolean {
  if (owner.pid === process.pid) return false;
  if (!isProcessAlive(owner.pid)) return false;
  const start = processStartTime(owner.pid);
  return owner.start === null || start === null || owner.start === start;
}

/** Removes the lock if its holder is gone; returns true when the caller should retry at once. */
async function breakIfStale(lockPath: string): Promise<{ retry: boolean; holder: string }> {
  let text: string;
  let mtimeMs: number;
  try {
    text = await fsp.readFile(lockPath, 'utf8');
    mtimeMs = (await fsp.stat(lockPath)).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { retry: true, holder: 'nobody' };
    throw err;
  }
  const owner = parseOwner(text);
  // An unparsable lock is one whose holder died between creating and writing it (or a stray
  // file); give a live writer a few seconds before calling it stale.
  const stale = owner ? !ownerAlive(owner) : Date.now() - mtimeMs > 5000;
  const holder = owner ? `pid ${owner.pid}` : 'an unknown process';
  if (!stale) return { retry: false, holder };
  // Move the file aside atomically (only one breaker can win for a given file), then make sure
  // what we moved is the stale lock we judged and not a fresh one that replaced it meanwhile.
  const aside = `${lockPath}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await fsp.rename(lockPath, aside);
  } catch {
    return { retry: true, holder };
  }
  const moved = await fsp.readFile(aside, 'utf8').catch(() => '');
  if (moved !== text) await fsp.link(aside, lockPath).catch(() => undefined); // put a live lock back
  await fsp.unlink(aside).catch(() => undefined);
  return { retry: true, holder };
}

async function acquire(lockPath: string, deadline: number): Promise<void> {
  const content = JSON.stringify({ pid: process.pid, start: processStartTime(process.pid) });
  let delay = 20;
  for (;;) {
    try {
      const fh = await fsp.open(lockPath, 'wx', 0o600);
      try {
        await fh.writeFile(content);
      } finally {
        await fh.close();
      }
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const { retry, holder } = await breakIfStale(lockPath);
    if (retry) continue;
    if (Date.now() >= deadline) throw new LockTimeoutError(lockPath, holder);
    await sleep(Math.min(delay, Math.max(1, deadline - Date.now())));
    delay = Math.min(delay * 2, 200);
  }
}

/** Runs `fn` while holding the lock file `lockPath`; waits for it until `deadline` (epoch ms). */
export async function withFileLock<T>(lockPath: string, deadline: number, fn: () => Promise<T>): Promise<T> {
  const previous = queues.get(lockPath) ?? Promise.resolve();
  let release!: () => void;
  const mine = new Promise<void>((resolve) => (release = resolve));
  const tail = previous.then(() => mine);
  queues.set(lockPath, tail);
  try {
    await previous;
    await acquire(lockPath, deadline);
    try {
      return await fn();
    } finally {
      await fsp.unlink(lockPath).catch(() => undefined);
    }
  } finally {
    release();
    if (queues.get(lockPath) === tail) queues.delete(lockPath);
  }
}
