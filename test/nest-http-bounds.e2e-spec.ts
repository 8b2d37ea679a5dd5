import 'reflect-metadata';
import { Body, Controller, INestApplication, Post, VersioningType } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QueryHandler, UpdateHandler, WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

// docs/api.md lists the bounds: past one, a 400 with the error's code, never a 500.

@Workflow('echo')
class EchoWorkflow {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

/** Sleeps for a duration taken from its input: a bad one must fail the run, not loop. */
@Workflow('sleeper')
class SleeperWorkflow {
  async run(ctx: WorkflowContext, input: { ms: number }) {
    await ctx.step('begin', () => 'begun');
    await ctx.sleep(input.ms);
    return 'slept';
  }
}

@Workflow('gate')
class GateWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => false, { timeout: '1m' });
  }
  @UpdateHandler('echo') echo(args: unknown) {
    return args;
  }
  @QueryHandler('echo') query(args: unknown) {
    return args;
  }
}

const nested = (levels: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};
/** The JSON text of nested(levels), written by hand: JSON.stringify itself overflows at ~5,000 levels. */
const deepJson = (levels: number) => `${'['.repeat(levels)}0${']'.repeat(levels)}`;
/** A request body with one field 5,000 levels deep, as raw JSON text. */
const withDeep = (fields: Record<string, unknown>, key: string) =>
  `{${Object.entries(fields)
    .map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)},`)
    .join('')}${JSON.stringify(key)}:${deepJson(5_000)}}`;
const HUGE = 1e16; // PostgreSQL 22008 (timestamp out of range) as a delay

const base = (tdb: TestDatabase) => ({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0 });

describe('Weft HTTP API: bounded inputs are a 400 with a code', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  const count = async () => (await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_workflows'))[0].n;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_bounds');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ ...base(tdb), http: true })],
      providers: [EchoWorkflow, SleeperWorkflow, GateWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
    await http.post('/weft/workflows').send({ type: 'gate', workflowId: 'gate-1' }).expect(201);
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it.each([
    ['startAfter 1e16', { type: 'echo', startAfter: HUGE }, 'WEFT_INVALID_DURATION'],
    ['startAfter past 100 years', { type: 'echo', startAfter: '36501d' }, 'WEFT_INVALID_DURATION'],
    ['executionTimeout 1e16', { type: 'echo', executionTimeout: HUGE }, 'WEFT_INVALID_DURATION'],
    ['startAt past 100 years', { type: 'echo', startAt: '2999-01-01T00:00:00Z' }, 'WEFT_INVALID_ARGUMENT'],
    ['input 5,000 levels deep', withDeep({ type: 'echo' }, 'input'), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['input 101 levels deep', { type: 'echo', input: nested(101) }, 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
  ])('POST /workflows with %s: 400, nothing written', async (_what, body, code) => {
    const before = await count();
    const res = await http.post('/weft/workflows').set('content-type', 'application/json').send(body).expect(400);
    expect(res.body).toEqual({ statusCode: 400, code, message: expect.any(String) });
    expect(await count()).toBe(before);
  });

  it.each([
    ['a signal payload 5,000 levels deep', '/weft/workflows/gate-1/signal/go', withDeep({}, 'payload'), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['a signal name of 256 characters', `/weft/workflows/gate-1/signal/${'n'.repeat(256)}`, {}, 'WEFT_INVALID_ARGUMENT'],
    ['update args 5,000 levels deep', '/weft/workflows/gate-1/update/echo', withDeep({}, 'args'), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['an update timeout of 1e16', '/weft/workflows/gate-1/update/echo', { args: 1, timeout: HUGE }, 'WEFT_INVALID_DURATION'],
    ['an update timeout over 60s', '/weft/workflows/gate-1/update/echo', { args: 1, timeout: '2m' }, 'WEFT_INVALID_ARGUMENT'],
    ['query args 5,000 levels deep', '/weft/workflows/gate-1/query/echo', withDeep({}, 'args'), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
  ])('POST with %s: 400', async (_what, url, body, code) => {
    const res = await http.post(url).set('content-type', 'application/json').send(body).expect(400);
    expect(res.body).toEqual({ statusCode: 400, code, message: expect.any(String) });
  });

  it('GET /workflows with a NUL in the type filter: 400', async () => {
    expect((await http.get('/weft/workflows?type=a%00b').expect(400)).body.code).toBe('WEFT_INVALID_ARGUMENT');
  });

  describe('refusals before the handler: every one carries a code, nothing is written', () => {
    const refused = async (res: request.Response, status: number, code: string, before: number) => {
      expect([res.status, res.body]).toEqual([status, { statusCode: status, code, message: expect.any(String) }]);
      expect(await count()).toBe(before);
    };
    const post = (url: string, body: string | Buffer, type = 'application/json') => http.post(url).set('content-type', type).send(body);

    it.each([
      ['malformed JSON', '{"type":', 400, 'WEFT_INVALID_ARGUMENT'],
      ['a top-level null', 'null', 400, 'WEFT_INVALID_ARGUMENT'],
      ['a top-level string', '"x"', 400, 'WEFT_INVALID_ARGUMENT'],
      ['a top-level number', '5', 400, 'WEFT_INVALID_ARGUMENT'],
      ['a top-level array', '[{"type":"echo"}]', 400, 'WEFT_INVALID_ARGUMENT'],
    ])('POST /workflows with %s: a 4xx with a code', async (_what, body, status, code) => {
      await refused(await post('/weft/workflows', body), status, code, await count());
    });

    it('bytes that are not UTF-8: 400', async () => {
      const res = await post('/weft/workflows', Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x3a, 0x31, 0x7d]));
      await refused(res, 400, 'WEFT_INVALID_ARGUMENT', await count());
    });

    it.each([
      ['an unsupported charset', 'application/json; charset=utf-16'],
      ['text/plain', 'text/plain'],
      ['a form', 'application/x-www-form-urlencoded'],
    ])('a body sent as %s: 415 with a code', async (_what, type) => {
      await refused(await post('/weft/workflows', '{"type":"echo"}', type), 415, 'WEFT_UNSUPPORTED_MEDIA_TYPE', await count());
    });

    it('bad percent-encoding in a path parameter: 400 with a code', async () => {
      await refused(await http.get('/weft/workflows/%E0%A4%A'), 400, 'WEFT_INVALID_ARGUMENT', await count());
      await refused(await post('/weft/workflows/gate-1/signal/%ZZ', '{}'), 400, 'WEFT_INVALID_ARGUMENT', await count());
    });

    it('a method or path no Weft route serves: 404 with a code', async () => {
      await refused(await http.put('/weft/workflows').send({}), 404, 'WEFT_ROUTE_NOT_FOUND', await count());
      await refused(await http.get('/weft/workflows/gate-1/nothing'), 404, 'WEFT_ROUTE_NOT_FOUND', await count());
    });

    it.each([
      ['256 characters', 't'.repeat(256)],
      ['a NUL', 'ec\u0000ho'],
    ])('a workflow type of %s: 400 WEFT_INVALID_ARGUMENT, not echoed', async (_what, type) => {
      const res = await post('/weft/workflows', `{"type":"${type}"}`);
      await refused(res, 400, 'WEFT_INVALID_ARGUMENT', await count());
      expect(res.body.message).not.toContain('t'.repeat(256));
    });

    it('resume with an unknown field: 400, the workflow untouched', async () => {
      await http.post('/weft/workflows/gate-1/suspend').send({}).expect(200);
      await refused(await http.post('/weft/workflows/gate-1/resume').send({ junk: 1 }), 400, 'WEFT_INVALID_ARGUMENT', await count());
      expect((await http.get('/weft/workflows/gate-1').expect(200)).body.status).toBe('suspended');
      await http.post('/weft/workflows/gate-1/resume').type('json').expect(200);
    });
  });

  it.each([
    ['POST', 'pause'],
    ['POST', 'unpause'],
    ['POST', 'trigger'],
    ['DELETE', ''],
  ])('%s /schedules/:id/%s with an unknown field: 400, nothing written', async (method, action) => {
    const engine = app.get(WeftEngine);
    if (!(await engine.schedules.list()).some((s) => s.id === 'yearly')) {
      await engine.schedules.create({ id: 'yearly', workflowType: 'echo', cron: '0 0 1 1 *' });
    }
    const schedules = async () => JSON.stringify(await tdb.query('SELECT * FROM weft.weft_schedules ORDER BY id'));
    const [before, rows] = [await count(), await schedules()];
    const url = `/weft/schedules/yearly${action ? `/${action}` : ''}`;
    const res = await (method === 'POST' ? http.post(url) : http.delete(url)).send({ junk: 1 }).expect(400);
    expect(res.body.code).toBe('WEFT_INVALID_ARGUMENT');
    expect([await count(), await schedules()]).toEqual([before, rows]);
  });

  describe('the documented 1 MiB payload is reachable over HTTP (the body limit follows maxPayloadBytes)', () => {
    const input = (bytes: number) => ({ blob: 'x'.repeat(bytes) });

    it('a 200 KB input and one just under 1 MiB start', async () => {
      await http
        .post('/weft/workflows')
        .send({ type: 'echo', input: input(200_000) })
        .expect(201);
      await http
        .post('/weft/workflows')
        .send({ type: 'echo', input: input(1024 * 1024 - 100) })
        .expect(201);
    });

    it('an input over 1 MiB in a body the limit lets in: 400 WEFT_PAYLOAD_TOO_LARGE, nothing written', async () => {
      const before = await count();
      const res = await http
        .post('/weft/workflows')
        .send({ type: 'echo', input: input(1024 * 1024 + 100) })
        .expect(400);
      expect(res.body.code).toBe('WEFT_PAYLOAD_TOO_LARGE');
      expect(await count()).toBe(before);
    });

    it('a body past the limit: 413 WEFT_REQUEST_TOO_LARGE, nothing written', async () => {
      const before = await count();
      const res = await http
        .post('/weft/workflows')
        .send({ type: 'echo', input: input(3 * 1024 * 1024) })
        .expect(413);
      expect(res.body).toEqual({ statusCode: 413, code: 'WEFT_REQUEST_TOO_LARGE', message: expect.any(String) });
      expect(await count()).toBe(before);
    });
  });

  it('an update within the bounds still answers', async () => {
    const res = await http
      .post('/weft/workflows/gate-1/update/echo')
      .send({ args: nested(50), timeout: '60s' })
      .expect(200);
    expect(res.body.result).toEqual(nested(50));
  });

  it('a workflow given a 1e16 ms sleep by its input fails with the typed error instead of looping', async () => {
    await http
      .post('/weft/workflows')
      .send({ type: 'sleeper', input: { ms: HUGE }, workflowId: 'sleeper-1' })
      .expect(201);
    const res = await http.get('/weft/workflows/sleeper-1/result?timeout=10s').expect(200);
    expect(res.body).toMatchObject({ done: true, status: 'failed', error: { name: 'InvalidDurationError' } });
    const described = await http.get('/weft/workflows/sleeper-1').expect(200);
    expect(described.body.history.map((op: { name: string }) => op.name)).toEqual(['begin']);
  });
});

describe("Weft's body reading under an app's global prefix and URI version, beside its own routes", () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;

  @Controller('echo')
  class AppEchoController {
    @Post()
    echo(@Body() body: unknown) {
      return { body };
    }
  }

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_bounds_prefix');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ ...base(tdb), http: true, metrics: true })],
      controllers: [AppEchoController],
      providers: [EchoWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    app.setGlobalPrefix('api', { exclude: ['metrics'] });
    app.enableVersioning({ type: VersioningType.URI, defaultVersion: '1' });
    await app.init();
    http = request(app.getHttpServer());
  });
  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it("reads a 200 KB start under /api/v1 and refuses a bad body with a code; the app's own route keeps its parser", async () => {
    await http
      .post('/api/v1/weft/workflows')
      .send({ type: 'echo', input: 'x'.repeat(200_000) })
      .expect(201);
    const bad = await http.post('/api/v1/weft/workflows').set('content-type', 'application/json').send('{"type":').expect(400);
    expect(bad.body.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await http.post('/api/v1/weft/nothing').send({}).expect(404)).body.code).toBeUndefined(); // not a Weft base
    expect((await http.put('/api/v1/weft/workflows').send({}).expect(404)).body.code).toBe('WEFT_ROUTE_NOT_FOUND');
    // The app's route: its own parser (100 KB by default) and Nest's answers, untouched.
    await http.post('/api/v1/echo').set('content-type', 'text/plain').send('hello').expect(201);
    expect((await http.post('/api/v1/echo').send({ big: 'x'.repeat(200_000) })).status).toBe(413);
  });
});

describe('WeftModule with a schema name too long for its NOTIFY channel', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_schema');
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('fails start-up with InvalidConfigurationError naming "schema"', async () => {
    const boot = async () => {
      const moduleRef = await Test.createTestingModule({
        imports: [WeftModule.forRoot({ ...base(tdb), schema: 's'.repeat(59) })],
        providers: [EchoWorkflow],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      try {
        await app.init();
      } finally {
        await app.close();
      }
    };
    await expect(boot()).rejects.toMatchObject({ code: 'WEFT_INVALID_CONFIGURATION', option: 'schema' });
  });
});
