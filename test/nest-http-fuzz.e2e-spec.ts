import type { IncomingMessage } from 'node:http';
import 'reflect-metadata';
import { CanActivate, ExecutionContext, Injectable, INestApplication, UnauthorizedException } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QueryHandler, UpdateHandler, WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import fc from 'fast-check';
import { Client } from 'pg';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

// Issue 33: every Weft route, fuzzed in method, path, query, body and content type, answers a
// success or a 4xx whose JSON body carries a `code`; never a 5xx; a refused request writes nothing.
// The routes are read from the Express router, so a new route is fuzzed without touching this file.
// Replay a failure with WEFT_FUZZ_SEED=<the seed printed>.

const SEED = Number(process.env.WEFT_FUZZ_SEED ?? Date.now() % 2 ** 31);
const RUNS = 600;
const KEY = 'fuzz-key';

@Workflow('gate')
class GateWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => false, { timeout: '1d' });
  }
  @UpdateHandler('echo') echo(args: unknown) {
    return args;
  }
  @QueryHandler('echo') query(args: unknown) {
    return args;
  }
}

@Workflow('echo')
class EchoWorkflow {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

/** The guard an app would write: an API key in a header. */
@Injectable()
class ApiKeyGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    const key = ctx.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers['x-api-key'];
    if (key !== KEY) throw new UnauthorizedException('An x-api-key header is required');
    return true;
  }
}

interface Route {
  method: string;
  path: string;
}

/** Every route the Express app serves (the app has only Weft's controllers). */
function expressRoutes(app: INestApplication): Route[] {
  const stack = (
    app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }
  ).router.stack;
  return stack.flatMap((l) => (l.route ? Object.keys(l.route.methods).map((m) => ({ method: m.toUpperCase(), path: l.route!.path })) : []));
}

const hex = (b: number) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
/** Percent-encodes every byte but the unreserved ones: Node refuses to send raw non-ASCII in a path. */
const encode = (s: string) =>
  [...Buffer.from(s, 'utf8')].map((b) => (/[\w.~-]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : hex(b))).join('');

const hostileSegment = fc.oneof(
  fc.constantFrom(
    '.',
    '..',
    '%2e',
    '%2e%2E',
    '%00',
    'a%00b',
    '%ZZ',
    '%',
    '%E0%A4%A',
    '%C0%AE',
    '%ED%A0%80',
    '%FF',
    '%C2%85',
    '%E2%80%AE',
    'x'.repeat(300),
    '%20',
    'gate-1%2Fcancel',
    'é',
  ),
  fc.string({ unit: 'binary', maxLength: 24 }).map(encode), // any code point, lone surrogates included
  fc.uint8Array({ minLength: 1, maxLength: 12 }).map((bytes) => [...bytes].map(hex).join('')), // mostly not UTF-8
);

/** A parameter's valid value for the route, so that cases also reach the handlers. */
function validParam(route: Route, param: string): string {
  if (param === 'file') return 'app.js';
  if (param === 'name') return 'echo';
  if (route.path.includes('/schedules')) return 'sched-1';
  return /\/(cancel|suspend|resume)$/.test(route.path) ? 'victim' : 'gate-1';
}

const queryKey = fc.oneof(
  fc.constantFrom('limit', 'status', 'type', 'idPrefix', 'cursor', 'after', 'junk', 'a[b]', '%ZZ'),
  fc.string({ maxLength: 10 }).map(encode),
);
const queryValue = fc.oneof(
  fc.constantFrom('', '1', '0', '-1', '1e3', '1000', '1001', 'abc', 'running,failed', 'bogus', '%00', '%FF', 'x'.repeat(300), '%ED%A0%80'),
  fc.string({ unit: 'binary', maxLength: 16 }).map(encode),
);
// `timeout` only with values that answer at once: a valid long one would hold the request open.
const query = fc.oneof(
  fc.constant(''),
  fc.constantFrom(
    '?timeout=0',
    '?timeout=1ms',
    '?timeout=61s',
    '?timeout=abc',
    '?timeout=-5',
    '?timeout=1e16',
    '?status[]=running',
    '?limit=1&limit=2',
  ),
  fc
    .array(fc.tuple(queryKey, queryValue), { minLength: 1, maxLength: 3 })
    .map((pairs) => `?${pairs.map(([k, v]) => `${k === 'timeout' ? 'x' : k}=${v}`).join('&')}`),
);

const weird = fc.constantFrom('', 'a\u0000b', '\ud800', 'x'.repeat(300), '..', 'é', '\u0085');
/** An object of the fields Weft's routes know, with values valid and not: reaches the checks past the parser. */
const fitted = fc
  .record(
    {
      type: fc.oneof(fc.constantFrom('echo', 'gate', 'nope'), weird),
      input: fc.jsonValue({ maxDepth: 4 }),
      workflowId: fc.oneof(fc.constantFrom('gate-1', 'victim', 'fuzz-a', 'fuzz-b'), weird),
      idPolicy: fc.constantFrom('return-existing', 'reject-duplicate', 'start-new-if-terminal', 'bogus', 5),
      startAfter: fc.constantFrom('1d', 0, -1, 1e16, 'abc', '36501d'),
      startAt: fc.constantFrom('2030-01-01T00:00:00Z', 'not a date', '2999-01-01T00:00:00Z', 5),
      executionTimeout: fc.constantFrom('1d', -1, 'soon'),
      reason: fc.oneof(fc.string({ maxLength: 20 }), weird, fc.constant(5)),
      payload: fc.jsonValue({ maxDepth: 4 }),
      args: fc.jsonValue({ maxDepth: 4 }),
      timeout: fc.constantFrom('1s', '61s', 1e16, -1, 'x'),
      id: fc.oneof(fc.constantFrom('sched-1', 'sched-2'), weird),
      workflowType: fc.oneof(fc.constantFrom('echo', 'nope'), weird),
      cron: fc.constantFrom('0 0 1 1 *', 'not cron', '* * * * * * * *'),
      every: fc.constantFrom('1d', '0', -1, 'x'),
      timezone: fc.constantFrom('UTC', 'Mars/Base', 5),
      overlap: fc.constantFrom('skip', 'bogus'),
      catchupWindow: fc.constantFrom('1h', -1),
      paused: fc.constantFrom(true, false, 'yes'),
      junk: fc.constant(1),
    },
    { requiredKeys: [] },
  )
  .map((o) => JSON.stringify(o));

/** A body the route accepts (or refuses only past the parser), by the route's path: the successes. */
function validBody(route: Route): fc.Arbitrary<string> {
  const p = route.path;
  const json = fc.jsonValue({ maxDepth: 3 });
  const shapes: Array<[RegExp, fc.Arbitrary<object>]> = [
    [
      /\/workflows$/,
      fc.record(
        { type: fc.constantFrom('echo', 'gate'), input: json, workflowId: fc.constantFrom('fuzz-a', 'fuzz-b', 'gate-1') },
        { requiredKeys: ['type'] },
      ),
    ],
    [/\/(cancel|suspend)$/, fc.record({ reason: fc.string({ maxLength: 20 }) }, { requiredKeys: [] })],
    [/\/signal\/:name$/, fc.record({ payload: json }, { requiredKeys: [] })],
    [/\/update\/:name$/, fc.record({ args: json, timeout: fc.constant('5s') }, { requiredKeys: [] })],
    [/\/query\/:name$/, fc.record({ args: json }, { requiredKeys: [] })],
    [
      /\/schedules$/,
      fc.record({
        id: fc.constantFrom('sched-2', 'sched-3'),
        workflowType: fc.constant('echo'),
        cron: fc.constant('0 0 1 1 *'),
        input: json,
      }),
    ],
    [/\/schedules\/:id$/, fc.record({ input: json, catchupWindow: fc.constant('1h') }, { requiredKeys: [] })],
  ];
  return (shapes.find(([re]) => re.test(p))?.[1] ?? fc.constant({})).map((o) => JSON.stringify(o));
}

const MiB = 1024 * 1024;
const body = fc.oneof(
  { weight: 3, arbitrary: fitted },
  { weight: 2, arbitrary: fc.json({ maxDepth: 4 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '',
      'null',
      '"x"',
      '5',
      'true',
      '[]',
      '{',
      '{"type":',
      '{}',
      '\u0000',
      '{"type":"echo","input":"\\u0000"}',
      '{"type":"echo","input":{"\\u0000":1}}',
      '{"type":"echo","input":"\\ud800"}',
      '{"payload":"\\udfff"}',
      '{"reason":"\\u0000"}',
      '{"junk":1}',
      '{"__proto__":{"polluted":1}}',
      '{"type":"echo","__proto__":{"input":1}}',
    ),
  },
  { weight: 1, arbitrary: fc.integer({ min: 50, max: 50_000 }).map((n) => `{"input":${'['.repeat(n)}${']'.repeat(n)}}`) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 48 }).map((b) => Buffer.from(b)) },
  { weight: 1, arbitrary: fc.constantFrom(200_000, MiB + 1000, 2 * MiB).map((n) => `{"type":"echo","input":"${'x'.repeat(n)}"}`) },
);
const contentType = fc.constantFrom(
  'application/json',
  'application/json; charset=utf-8',
  'application/JSON;charset="UTF-8"',
  'application/json; charset=latin1',
  'application/json; charset=utf-16',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/merge-patch+json',
);

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];

interface Case {
  route: Route;
  method: string;
  params: string[];
  query: string;
  body: string | Buffer | null;
  contentType: string;
  auth: 'key' | 'none' | 'wrong';
}

function caseOf(routes: Route[]): fc.Arbitrary<Case> {
  return fc.constantFrom(...routes).chain((route) => {
    const params = route.path.match(/:\w+/g) ?? [];
    return fc.record({
      route: fc.constant(route),
      method: fc.oneof({ weight: 4, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
      params: fc.tuple(
        ...params.map((p) =>
          fc.oneof({ weight: 3, arbitrary: fc.constant(validParam(route, p.slice(1))) }, { weight: 2, arbitrary: hostileSegment }),
        ),
      ),
      query: fc.oneof({ weight: 2, arbitrary: fc.constant('') }, { weight: 1, arbitrary: query }),
      body: fc.oneof(
        { weight: 1, arbitrary: fc.constant(null) },
        { weight: 2, arbitrary: validBody(route) },
        { weight: 3, arbitrary: body },
      ),
      contentType: fc.oneof({ weight: 4, arbitrary: fc.constant('application/json') }, { weight: 2, arbitrary: contentType }),
      auth: fc.oneof(
        { weight: 8, arbitrary: fc.constant('key' as const) },
        { weight: 1, arbitrary: fc.constantFrom('none' as const, 'wrong' as const) },
      ),
    }) as fc.Arbitrary<Case>;
  });
}

function urlOf(c: Case): string {
  let i = 0;
  return c.route.path.replace(/:\w+/g, () => c.params[i++]) + c.query;
}

const describeCase = (c: Case) =>
  `${c.method} ${urlOf(c).slice(0, 300)} [${c.contentType}, auth ${c.auth}] body: ${
    c.body === null
      ? '(none)'
      : Buffer.isBuffer(c.body)
        ? `bytes ${c.body.toString('hex').slice(0, 100)}`
        : JSON.stringify(c.body.slice(0, 300))
  }${c.body !== null && c.body.length > 300 ? ` (${c.body.length} long)` : ''}`;

/** superagent's parser for a route that may answer with an event stream: such a body is not read. */
function sseOrJson(response: unknown, done: (err: Error | null, body: unknown) => void): void {
  const res = response as IncomingMessage;
  if (String(res.headers['content-type']).startsWith('text/event-stream')) {
    res.destroy();
    return done(null, null);
  }
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (text += chunk));
  res.on('end', () => {
    try {
      done(null, text ? JSON.parse(text) : {});
    } catch {
      done(null, text);
    }
  });
}

describe('Weft HTTP routes under fuzzing: a success or a typed 4xx, never a 5xx, no write on refusal', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let db: Client;
  let checksumSql: string;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_fuzz');
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({
          database: { url: tdb.url },
          schema: 'weft',
          timerPollInterval: 100,
          shutdownGracePeriod: 0,
          http: { guards: [ApiKeyGuard] },
          metrics: true,
          dashboard: true,
        }),
      ],
      providers: [GateWorkflow, EchoWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false }); // the app's defaults: Nest's own body parser
    await app.init();
    http = request(app.getHttpServer());
    const engine = app.get(WeftEngine);
    await engine.start('gate', null, { workflowId: 'gate-1' });
    await engine.start('gate', null, { workflowId: 'victim' });
    await engine.schedules.create({ id: 'sched-1', workflowType: 'echo', cron: '0 0 1 1 *' });
    db = new Client({ connectionString: tdb.url });
    db.on('error', () => undefined);
    await db.connect();
    const tables = await db.query<{ t: string }>(
      "SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'weft' AND table_name LIKE 'weft\\_%' ORDER BY 1",
    );
    expect(tables.rows.length).toBeGreaterThan(3);
    // One digest of every row of every Weft table.
    checksumSql = `SELECT md5(string_agg(r, '|' ORDER BY r)) AS sum FROM (${tables.rows
      .map(({ t }) => `SELECT '${t}:' || x::text AS r FROM weft."${t}" x`)
      .join(' UNION ALL ')}) s`;
  });

  afterAll(async () => {
    await db?.end();
    await app?.close();
    await tdb?.drop();
  });

  const checksum = async () => (await db.query<{ sum: string | null }>(checksumSql)).rows[0].sum ?? '';

  /** After a success, what it set going (a run, a signal taken in) settles before the next case is measured. */
  async function settled(): Promise<void> {
    const deadline = Date.now() + 10_000;
    let last = await checksum();
    let stable = 0;
    while (stable < 3) {
      if (Date.now() > deadline) throw new Error('the Weft tables kept changing for 10 s after a successful request');
      await new Promise((r) => setTimeout(r, 25));
      const now = await checksum();
      stable = now === last ? stable + 1 : 0;
      last = now;
    }
  }

  function send(c: Case) {
    const method = c.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options';
    const req = http[method](urlOf(c)).timeout({ deadline: 20_000 });
    if (c.auth !== 'none') req.set('x-api-key', c.auth === 'key' ? KEY : 'wrong');
    if (c.body !== null && method !== 'head') req.set('content-type', c.contentType).send(c.body);
    // A stream route that accepts answers with server-sent events that last while the workflow
    // runs: its status and headers are the answer; the body is not waited for.
    if (c.route.path.endsWith('/streams/:key')) req.parse(sseOrJson);
    return req.ok(() => true);
  }

  it(`answers ${RUNS} generated requests (seed ${SEED}) with a success or a typed 4xx`, async () => {
    const routes = expressRoutes(app);
    expect(routes.length).toBeGreaterThanOrEqual(20);
    const statuses = new Map<number, number>();
    await settled();
    let before = await checksum();
    try {
      await fc.assert(
        fc.asyncProperty(caseOf(routes), async (c) => {
          const res = await send(c);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const what = describeCase(c);
          expect([what, res.status < 500]).toEqual([what, true]);
          if (res.status < 400) {
            if (!['GET', 'HEAD', 'OPTIONS'].includes(c.method)) {
              await settled(); // a start, a signal...: let its run's writes land first
              before = await checksum();
            }
            return;
          }
          if (c.method !== 'HEAD') {
            expect([what, res.headers['content-type']]).toEqual([what, expect.stringMatching(/^application\/json/)]);
            expect([what, res.body]).toEqual([
              what,
              expect.objectContaining({ statusCode: res.status, code: expect.stringMatching(/^WEFT_/) }),
            ]);
          }
          const after = await checksum();
          expect([what, 'nothing written']).toEqual([what, after === before ? 'nothing written' : 'the Weft tables changed']);
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    } catch (err) {
      throw new Error(`Fuzz failure; replay with WEFT_FUZZ_SEED=${SEED}\n${(err as Error).message}`, { cause: err });
    }
    // The cases reached both the handlers and the refusals.
    const count = (from: number, to: number) => [...statuses].filter(([s]) => s >= from && s < to).reduce((n, [, k]) => n + k, 0);
    expect(count(200, 300)).toBeGreaterThan(RUNS / 20);
    expect(count(400, 500)).toBeGreaterThan(RUNS / 4);
  });
});
