import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { UpdateHandler, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

// A payload or reason PostgreSQL cannot store (U+0000, a lone UTF-16 surrogate) is a 400
// WEFT_PAYLOAD_NOT_SERIALIZABLE with nothing stored. A signal used to be accepted (202) and then
// suspend its workflow at every resume; a delayed start's input and a cancel reason were a 500.

@Workflow('echo')
class EchoWorkflow {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

@Workflow('gate')
class GateWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal('go', { timeout: '1h' });
  }
  @UpdateHandler('echo') echo(args: unknown) {
    return args;
  }
}

const BAD: Array<[string, unknown]> = [
  ['a NUL in a value', { note: 'a\u0000b' }],
  ['a NUL in a key', { ['k\u0000']: 1 }],
  ['a lone surrogate', 'x\ud800'],
];

describe('Weft HTTP API: a payload PostgreSQL cannot store is a 400 with a code, nothing stored', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  const counts = async () =>
    (
      await tdb.query<{ w: number; m: number }>(
        'SELECT (SELECT count(*)::int FROM weft.weft_workflows) AS w, (SELECT count(*)::int FROM weft.weft_messages) AS m',
      )
    )[0];

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_payloads');
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0, http: true }),
      ],
      providers: [EchoWorkflow, GateWorkflow],
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

  const routes: Array<[string, string, (v: unknown) => object]> = [
    ['a signal', '/weft/workflows/gate-1/signal/go', (v) => ({ payload: v })],
    ['a start due now', '/weft/workflows', (v) => ({ type: 'echo', input: v })],
    ['a delayed start', '/weft/workflows', (v) => ({ type: 'echo', input: v, startAfter: '1h' })],
    ['an update', '/weft/workflows/gate-1/update/echo', (v) => ({ args: v })],
    ['a query', '/weft/workflows/gate-1/query/echo', (v) => ({ args: v })],
  ];
  const cases = routes.flatMap(([route, path, body]) => BAD.map(([what, v]) => [`${route} with ${what}`, path, body(v)] as const));

  it.each(cases)('%s', async (_what, path, body) => {
    const before = await counts();
    const res = await http.post(path).send(body);
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('WEFT_PAYLOAD_NOT_SERIALIZABLE');
    expect(await counts()).toEqual(before);
  });

  it.each([
    ['cancel', 'a NUL', 'stop\u0000'],
    ['cancel', 'a lone surrogate', 'stop \udc00'],
    ['suspend', 'a NUL', 'stop\u0000'],
    ['suspend', 'a lone surrogate', 'stop \udc00'],
  ])('%s with a reason holding %s', async (action, _what, reason) => {
    const res = await http.post(`/weft/workflows/gate-1/${action}`).send({ reason });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('WEFT_PAYLOAD_NOT_SERIALIZABLE');
    expect((await http.get('/weft/workflows/gate-1').expect(200)).body.status).toBe('running');
  });

  it.each(['.', '..', 'a\u0085b'])('a start with the workflow id %j is a 400 WEFT_INVALID_WORKFLOW_ID', async (workflowId) => {
    const before = await counts();
    const res = await http.post('/weft/workflows').send({ type: 'echo', workflowId });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('WEFT_INVALID_WORKFLOW_ID');
    expect(await counts()).toEqual(before);
  });

  it('the workflow offered them still takes a good signal and ends', async () => {
    await http.post('/weft/workflows/gate-1/signal/go').send({ payload: 'good' }).expect(202);
    const res = await http.get('/weft/workflows/gate-1/result?timeout=10s').expect(200);
    expect(res.body).toMatchObject({ done: true, status: 'completed', output: 'good' });
  });
});
