import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import {
  DatabaseUnavailableError,
  InvalidConfigurationError,
  OwnershipModeMismatchError,
  WeftEngine,
  WeftLifecycle,
  WeftModule,
  WeftModuleOptions,
  Workflow,
} from '@weft/nest';
import { spawn } from 'node:child_process';
import { Client } from 'pg';
import request from 'supertest';
import { HealthController } from '../src/health.controller.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { sourcePath, TS_NODE_ARGS } from './support/node-ts.js';

@Workflow('fail-fast-echo')
class EchoWorkflow {
  async run(_ctx: unknown, input: unknown) {
    return input;
  }
}

/** docs/api.md (start-up errors): a fatal start-up error rejects start-up with the typed error; only recovery runs in the background. */
describe('WeftModule fail-fast start-up', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_fail_fast');
    // The first fencing engine on schema "weft" writes the marker: this database is 'lease'.
    const first = await WeftEngine.create({ database: { url: tdb.url }, schema: 'weft', ownership: 'lease', shutdownGracePeriod: 0 });
    await first.bootstrap();
    await first.dispose();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  const options = (extra: Partial<WeftModuleOptions> = {}): WeftModuleOptions => ({
    database: { url: tdb.url },
    schema: 'weft',
    timerPollInterval: 50,
    shutdownGracePeriod: 0,
    ...extra,
  });

  async function createApp(extra: Partial<WeftModuleOptions>): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({
      imports: [TerminusModule.forRoot({ logger: false }), WeftModule.forRoot(options(extra))],
      controllers: [HealthController],
      providers: [EchoWorkflow],
    }).compile();
    return moduleRef.createNestApplication({ logger: false });
  }

  /** Weft's own connections (application_name 'weft') to the test database; a closed pool leaves none. */
  async function weftConnections(): Promise<number> {
    const rows = await tdb.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'weft' AND pid <> pg_backend_pid()`,
      [tdb.name],
    );
    return rows[0].n;
  }

  it('app.init() rejects with OwnershipModeMismatchError, message starting with its code, and closes the engine', async () => {
    const app = await createApp({ ownership: 'workflow-lease' });
    const engine = app.get(WeftEngine);
    const error = await app.init().then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(OwnershipModeMismatchError);
    expect(error).toMatchObject({ code: 'WEFT_OWNERSHIP_MODE_MISMATCH', configuredMode: 'workflow-lease', storedMode: 'lease' });
    expect((error as Error).message).toMatch(/^WEFT_OWNERSHIP_MODE_MISMATCH: This engine is configured with ownership 'workflow-lease'/);
    // Closed before close() is called: a process that exits on the error leaks nothing.
    expect(engine.isDisposed).toBe(true);
    expect(engine.database.dataSource.isInitialized).toBe(false);
    await app.close();
    await waitFor(async () => (await weftConnections()) === 0, 'no Weft connection left');
  });

  it('app.listen() rejects the same way and leaves no server listening', async () => {
    const app = await createApp({ ownership: 'workflow-lease' });
    await expect(app.listen(0, '127.0.0.1')).rejects.toThrow(/^WEFT_OWNERSHIP_MODE_MISMATCH: /);
    expect(app.getHttpServer().listening).toBe(false);
    await app.close();
    expect(app.get(WeftEngine).isDisposed).toBe(true);
  });

  it('a matching mode starts, and recovery does not hold app.init(): health is 503 until it is done', async () => {
    // A lock that holds recovery's first read of weft_workflows (the gates and the lease use other tables).
    const app = await createApp({ ownership: 'lease' });
    const locker = new Client({ connectionString: tdb.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE weft.weft_workflows IN ACCESS EXCLUSIVE MODE');
      await app.init(); // the gates passed; recovery waits on the lock
      const lifecycle = app.get(WeftLifecycle);
      expect(lifecycle.state).toBe('running');
      const res = await request(app.getHttpServer()).get('/health');
      expect(res.status).toBe(503);
      expect(res.body.error.weft).toMatchObject({ status: 'down', reason: 'bootstrap not finished' });
      await locker.query('ROLLBACK');
      await expect(lifecycle.ready()).resolves.toBe('ready');
      await waitFor(async () => (await request(app.getHttpServer()).get('/health')).status === 200, 'GET /health 200');
    } finally {
      await locker.end().catch(() => undefined);
      await app.close();
    }
  });

  it('bad configuration rejects start-up with InvalidConfigurationError (code first) and leaves no pool behind', async () => {
    const error = await createApp({ ownership: 'workflow-lease', workflowClaimTtl: '1s', workflowClaimRenewInterval: '1s' }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(InvalidConfigurationError);
    expect((error as Error).message).toMatch(/^WEFT_INVALID_CONFIGURATION: Invalid Weft option "workflowClaimRenewInterval"/);
    await waitFor(async () => (await weftConnections()) === 0, 'no Weft connection left');
  });

  it('an unreachable database rejects start-up with DatabaseUnavailableError (code first)', async () => {
    const error = await createApp({ database: { url: 'postgres://weft:secret@127.0.0.1:1/nowhere' } }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(DatabaseUnavailableError);
    expect((error as Error).message).toMatch(/^WEFT_DATABASE_UNAVAILABLE: Cannot reach PostgreSQL at 127\.0\.0\.1:1 /);
  });

  it('the demo exits non-zero with the WEFT_OWNERSHIP_MODE_MISMATCH line instead of serving', async () => {
    const main = sourcePath('src/main.ts');
    // The demo runs 'workflow-lease' by default; this database says 'lease'.
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', PORT: '0', DATABASE_URL: tdb.url, WEFT_SCHEMA: 'weft' };
    delete env.WEFT_OWNERSHIP;
    const proc = spawn(process.execPath, [...TS_NODE_ARGS, main], { env, stdio: 'pipe' });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (err += d.toString()));
    let exit: { code: number | null } | undefined;
    proc.on('exit', (code) => (exit = { code }));
    try {
      // Settles on whichever comes first: the exit this test expects, or the demo serving anyway.
      await waitFor(() => exit !== undefined || /listening on/.test(out), 'the demo to exit or listen', 30_000, 50);
      expect(out).not.toContain('listening on');
      expect(exit).toEqual({ code: 1 });
      const lines = err.split('\n').filter((l) => l.includes('WEFT_OWNERSHIP_MODE_MISMATCH'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^WEFT_OWNERSHIP_MODE_MISMATCH: This engine is configured with ownership 'workflow-lease', but the database was established with 'lease'/,
      );
    } finally {
      proc.kill('SIGKILL');
    }
  });
});
