// A private PostgreSQL cluster the chaos harness owns, so it can stop and restart it (fast and
// immediate shutdown). Same approach as test/support/pg-cluster.ts: Debian's (or the embedded
// package's) initdb/pg_ctl, run as the `postgres` user through runuser when we are root.
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { promisify } from 'node:util';

import { findBinDir, freePort } from '../support/pg-cluster.js';

const run = promisify(execFile);
const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

async function asPostgres(cmd: string, args: string[]): Promise<void> {
  const [file, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
  try {
    await run(file, argv, { encoding: 'utf8', timeout: 120_000 });
  } catch (err) {
    const e = err as { stderr?: string; stdout?: string; message: string };
    throw new Error(`${path.basename(cmd)} ${args.join(' ')} failed: ${e.stderr || e.stdout || e.message}`);
  }
}

export type ShutdownMode = 'fast' | 'immediate';

export class PgCluster {
  private running = false;

  private constructor(
    readonly dir: string,
    readonly binDir: string,
    readonly port: number,
    private readonly maxConnections: number,
  ) {}

  /** initdb into a fresh temp dir and start the server on a free loopback port. */
  static async create(opts: { maxConnections?: number } = {}): Promise<PgCluster> {
    const binDir = findBinDir();
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-chaos-pg-'));
    fs.chmodSync(dir, 0o755);
    fs.mkdirSync(path.join(dir, 'data'), { mode: 0o700 });
    if (isRoot()) await run('chown', ['-R', 'postgres:', dir]);
    const cluster = new PgCluster(dir, binDir, await freePort(), opts.maxConnections ?? 200);
    await asPostgres(path.join(binDir, 'initdb'), ['-D', cluster.dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
    await cluster.start();
    return cluster;
  }

  get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  get logFile(): string {
    return path.join(this.dir, 'pg.log');
  }

  url(database = 'postgres'): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  async start(): Promise<void> {
    // fsync=off is safe here: an immediate shutdown is a server crash, not an OS crash, and
    // synchronous_commit stays on so no acknowledged commit can be lost.
    const opts = `-p ${this.port} -c listen_addresses=127.0.0.1 -k ${this.dir} -c max_connections=${this.maxConnections} -c fsync=off`;
    await asPostgres(path.join(this.binDir, 'pg_ctl'), ['-D', this.dataDir, '-l', this.logFile, '-w', '-t', '120', '-o', opts, 'start']);
    this.running = true;
  }

  async stop(mode: ShutdownMode): Promise<void> {
    this.running = false;
    await asPostgres(path.join(this.binDir, 'pg_ctl'), ['-D', this.dataDir, '-m', mode, '-w', '-t', '120', 'stop']);
  }

  get isRunning(): boolean {
    return this.running;
  }

  /** Stops (and removes) the cluster; safe to call twice. */
  async destroy(): Promise<void> {
    if (!fs.existsSync(this.dir)) return;
    await this.stop('immediate').catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}
