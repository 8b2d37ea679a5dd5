import 'reflect-metadata';
import { INestApplication, Logger } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Test } from '@nestjs/testing';
import { WeftEngine, WeftHealthIndicator, WeftModule, WeftModuleOptions } from '@weft/nest';
import { Client } from 'pg';
import request from 'supertest';
// The demo's own controller: the test checks what `npm start` serves.
import { HealthController } from '../src/health.controller.js';
import { adminUrl, createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';

async function admin(sql: string): Promise<void> {
  const c = new Client({ connectionString: adminUrl() });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function createApp(options: WeftModuleOptions): Promise<INestApplication> {
  const moduleRef = await Test.createTestingModule({
    imports: [TerminusModule.forRoot({ logger: false }), WeftModule.forRoot(options)],
    controllers: [HealthController],
  }).compile();
  const app = moduleRef.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('WeftHealthIndicator through Terminus', () => {
  let tdb: TestDatabase;
  let app: INestApplication;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_health');
    app = await createApp({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0 });
  });

  afterAll(async () => {
    await admin(`ALTER DATABASE "${tdb.name}" ALLOW_CONNECTIONS true`).catch(() => undefined);
    await app?.close();
    await tdb?.drop();
  });

  /** GET /health until it answers `code`; returns that response. */
  async function healthUntil(code: number, timeoutMs = 10_000): Promise<request.Response> {
    let last: request.Response | undefined;
    await waitFor(
      async () => {
        last = await request(app.getHttpServer()).get('/health');
        return last.status === code;
      },
      `GET /health ${code}`,
      timeoutMs,
      50,
    );
    return last!;
  }

  it('is up (200) once bootstrapped, with engine details and no connection string', async () => {
    const res = await healthUntil(200);
    expect(res.body.info.weft).toEqual({
      status: 'up',
      engineId: expect.any(String),
      ownership: 'none',
      claimsHeld: 0,
      renewalFailures: 0,
      liveWorkflows: 0,
      queues: {},
    });
    expect(res.body.info.database).toMatchObject({ status: 'up', database: 'url', schema: 'weft' });
    expect(JSON.stringify(res.body)).not.toContain(tdb.url);
    expect(JSON.stringify(res.body)).not.toContain('postgres://');
  });

  it('goes down (503) when the database refuses connections, with a code and no driver text, and recovers by itself', async () => {
    const warn = vi.spyOn(Logger.prototype, 'warn');
    await admin(`ALTER DATABASE "${tdb.name}" ALLOW_CONNECTIONS false`);
    await admin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${tdb.name}' AND pid <> pg_backend_pid()`);
    const down = await healthUntil(503);
    expect(down.body.status).toBe('error');
    const unavailable = { code: 'WEFT_DATABASE_UNAVAILABLE', reason: 'database unavailable; the log says why' };
    expect(down.body.error.weft).toMatchObject({ status: 'down', ...unavailable });
    expect(down.body.error.database).toEqual({ status: 'down', database: 'url', schema: 'weft', ...unavailable });
    // /health is unguarded: the driver's message (it names the database) stays in the log.
    const text = JSON.stringify(down.body);
    for (const leak of [tdb.url, tdb.name, 'connection', 'terminat', 'postgres'])
      expect([leak, text.includes(leak)]).toEqual([leak, false]);
    const logged = warn.mock.calls.map((c) => String(c[0])).filter((m) => m.startsWith('Health: the database is unavailable: '));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.some((m) => m.includes(tdb.name))).toBe(true);
    warn.mockRestore();

    await admin(`ALTER DATABASE "${tdb.name}" ALLOW_CONNECTIONS true`);
    const up = await healthUntil(200, 15_000);
    expect(up.body.info.weft.status).toBe('up');
  });

  it('goes down when the last background pass is older than two intervals', async () => {
    const engine = app.get(WeftEngine);
    const real = engine.healthSnapshot.bind(engine);
    const spy = vi
      .spyOn(engine, 'healthSnapshot')
      .mockImplementation(() => ({ ...real(), lastBackgroundPassAt: new Date(Date.now() - 60_000) }));
    try {
      const res = await app.get(WeftHealthIndicator).isHealthy();
      expect(res.weft).toMatchObject({ status: 'down', reason: expect.stringMatching(/^last background pass \d+ ms ago/) });
    } finally {
      spy.mockRestore();
    }
    expect((await app.get(WeftHealthIndicator).isHealthy()).weft.status).toBe('up');
  });

  it('skips the background-pass rule under backgroundTasks "manual" and reports a disposed engine as down', async () => {
    const manual = await createApp({ database: { url: tdb.url }, schema: 'weft', backgroundTasks: 'manual', shutdownGracePeriod: 0 });
    const indicator = manual.get(WeftHealthIndicator);
    await waitFor(async () => (await indicator.isHealthy()).weft.status === 'up', 'manual engine up');
    await manual.close();
    const after = await indicator.isHealthy();
    expect(after.weft).toMatchObject({ status: 'down', reason: 'engine disposed' });
  });
});
