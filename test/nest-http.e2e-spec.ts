import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QueryHandler, SignalHandler, UpdateHandler, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';

@Workflow('echo')
class EchoWorkflow {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

@Workflow('slow')
class SlowWorkflow {
  async run(ctx: WorkflowContext, input: { ms: number }) {
    await ctx.step('begin', () => 'begun');
    await ctx.sleep(input.ms);
    return 'slept';
  }
}

@Workflow('gate')
class GateWorkflow {
  private open = false;
  private limit = 0;
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => this.open, { timeout: '1m' });
    return { limit: this.limit };
  }
  @SignalHandler('open') onOpen() {
    this.open = true;
  }
  @UpdateHandler('limit') setLimit(n: number) {
    if (typeof n !== 'number') throw new TypeError('limit must be a number');
    this.limit = n;
    return { limit: n };
  }
  @QueryHandler('state') state() {
    return { open: this.open, limit: this.limit };
  }
}

@Workflow('publisher')
class PublisherWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.setEvent('stage', { n: 1 });
    await ctx.waitForSignal('go');
    await ctx.setEvent('done', true);
  }
}

@Workflow('streamer')
class StreamerWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.writeStream('out', 'a');
    await ctx.waitForSignal('go');
    await ctx.writeStream('out', { b: 2 });
    await ctx.closeStream('out');
  }
}

@Workflow('boom')
class BoomWorkflow {
  async run(): Promise<never> {
    throw new Error('kaboom');
  }
}

const base = (tdb: TestDatabase) => ({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0 });

describe('Weft HTTP API (http: true, metrics: true)', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ ...base(tdb), http: true, metrics: true })],
      providers: [EchoWorkflow, SlowWorkflow, BoomWorkflow, GateWorkflow, PublisherWorkflow, StreamerWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('starts a workflow (201), waits for its result, describes and lists it', async () => {
    const started = await http
      .post('/weft/workflows')
      .send({ type: 'echo', input: { a: 1 }, workflowId: 'echo-1' })
      .expect(201);
    expect(started.body).toEqual({ workflowId: 'echo-1' });
    const result = await http.get('/weft/workflows/echo-1/result?timeout=10s').expect(200);
    expect(result.body).toEqual({ workflowId: 'echo-1', done: true, status: 'completed', output: { a: 1 } });
    const described = await http.get('/weft/workflows/echo-1').expect(200);
    expect(described.body).toMatchObject({ workflowId: 'echo-1', type: 'echo', status: 'completed', output: { a: 1 }, history: [] });

    await http.post('/weft/workflows').send({ type: 'echo', input: 2, workflowId: 'echo-2' }).expect(201);
    await http.get('/weft/workflows/echo-2/result?timeout=10s').expect(200);
    const page1 = await http.get('/weft/workflows?status=completed&type=echo&limit=1').expect(200);
    expect(page1.body.items).toHaveLength(1);
    expect(page1.body.nextCursor).toEqual(expect.any(String));
    const page2 = await http.get('/weft/workflows').query({ status: 'completed', type: 'echo', limit: '1', cursor: page1.body.nextCursor });
    expect(page2.status).toBe(200);
    expect(page2.body.items).toHaveLength(1);
    expect(new Set([page1.body.items[0].workflowId, page2.body.items[0].workflowId])).toEqual(new Set(['echo-1', 'echo-2']));
  });

  it('lists by attribute (?attr.<key>=, ?where=), newest first, with input and output', async () => {
    for (const [id, attributes] of [
      ['attr-1', { tenant: 42, amount: 50 }],
      ['attr-2', { tenant: 42, amount: 150 }],
      ['attr-3', { tenant: '43', amount: 500 }],
    ] as const) {
      await http.post('/weft/workflows').send({ type: 'echo', input: id, workflowId: id, attributes }).expect(201);
      await http.get(`/weft/workflows/${id}/result?timeout=10s`).expect(200);
    }
    const ids = async (query: string) => {
      const res = await http.get(`/weft/workflows?${query}`).expect(200);
      return (res.body.items as Array<{ workflowId: string }>).map((i) => i.workflowId);
    };
    expect(await ids('attr.tenant=42')).toEqual(['attr-1', 'attr-2']);
    expect(await ids('attr.tenant=42&attr.tenant=43')).toEqual(['attr-1', 'attr-2', 'attr-3']);
    expect(await ids(`attr.tenant=${encodeURIComponent('"43"')}`)).toEqual(['attr-3']);
    expect(await ids(`attr.tenant=42&where=${encodeURIComponent('amount>100')}`)).toEqual(['attr-2']);
    expect(await ids(`where=${encodeURIComponent('amount>=50')}&order=newest`)).toEqual(['attr-3', 'attr-2', 'attr-1']);
    const full = await http.get('/weft/workflows?attr.amount=500&include=input,output').expect(200);
    expect(full.body.items).toEqual([
      expect.objectContaining({ workflowId: 'attr-3', input: 'attr-3', output: 'attr-3', attributes: { tenant: '43', amount: 500 } }),
    ]);
    const bad = await http.get(`/weft/workflows?where=${encodeURIComponent('amount>soon')}`).expect(400);
    expect(bad.body.code).toBe('WEFT_INVALID_ARGUMENT');
    await http.get('/weft/workflows?attr.9x=1').expect(400);
    await http.get('/weft/workflows?order=sideways').expect(400);
    await http
      .post('/weft/workflows')
      .send({ type: 'echo', attributes: { bad: { nested: 1 } } })
      .expect(400);
  });

  it('forks (201) and retries (200): a failed run goes on as its next run; bad requests are typed', async () => {
    await http.post('/weft/workflows').send({ type: 'boom', workflowId: 'boom-r' }).expect(201);
    await http.get('/weft/workflows/boom-r/result?timeout=10s').expect(200);
    await http.post('/weft/workflows/boom-r/retry').send({}).expect(200, { workflowId: 'boom-r', status: 'running' });
    await waitFor(async () => (await http.get('/weft/workflows/boom-r')).body.runNumber === 2, 'run 2');
    const retried = await waitFor(async () => {
      const d = (await http.get('/weft/workflows/boom-r')).body;
      return d.status === 'failed' ? d : undefined;
    }, 'run 2 failed again');
    expect(retried).toMatchObject({ runNumber: 2, retriedFrom: { runNumber: 1, fromSeq: 0 } });
    const forked = await http.post('/weft/workflows/echo-1/fork').send({ fromStep: 0, workflowId: 'echo-1-fork' }).expect(201);
    expect(forked.body).toEqual({ workflowId: 'echo-1-fork', forkedFrom: 'echo-1' });
    const result = await http.get('/weft/workflows/echo-1-fork/result?timeout=10s').expect(200);
    expect(result.body).toMatchObject({ status: 'completed', output: { a: 1 } });
    expect((await http.get('/weft/workflows/echo-1-fork')).body.forkedFrom).toEqual({ workflowId: 'echo-1', runNumber: 1, fromSeq: 0 });
    expect((await http.post('/weft/workflows/echo-1/retry').send({}).expect(409)).body.code).toBe('WEFT_WORKFLOW_NOT_RUNNING');
    expect((await http.post('/weft/workflows/echo-1/fork').send({ fromStep: 'nope' }).expect(400)).body.code).toBe('WEFT_INVALID_ARGUMENT');
    await http.post('/weft/workflows/echo-1/fork').send({}).expect(400);
    await http.post('/weft/workflows/nope/retry').send({}).expect(404);
  });

  it('reports a failed workflow as the outcome of /result', async () => {
    await http.post('/weft/workflows').send({ type: 'boom', workflowId: 'boom-1' }).expect(201);
    const res = await http.get('/weft/workflows/boom-1/result?timeout=10s').expect(200);
    expect(res.body).toMatchObject({ workflowId: 'boom-1', done: true, status: 'failed', error: { name: 'Error', message: 'kaboom' } });
  });

  it('suspends, resumes and cancels; 202 while unfinished; 409 when the state does not allow it', async () => {
    await http
      .post('/weft/workflows')
      .send({ type: 'slow', input: { ms: 3_600_000 }, workflowId: 'slow-1' })
      .expect(201);
    expect((await http.get('/weft/workflows/slow-1/result').expect(202)).body).toEqual({ workflowId: 'slow-1', done: false });
    await http.post('/weft/workflows/slow-1/suspend').send({ reason: 'maintenance' }).expect(200);
    expect((await http.get('/weft/workflows/slow-1').expect(200)).body.status).toBe('suspended');
    const again = await http.post('/weft/workflows/slow-1/suspend').type('json').expect(409);
    expect(again.body).toMatchObject({ statusCode: 409, code: 'WEFT_WORKFLOW_NOT_RUNNING' });
    await http.post('/weft/workflows/slow-1/resume').type('json').expect(200, { workflowId: 'slow-1', status: 'running' });
    await http.post('/weft/workflows/slow-1/cancel').send({ reason: 'customer changed their mind' }).expect(200);
    // The workflow is asked; it ends once its code has taken the cancel (docs/cancellation.md).
    const res = await waitFor(async () => {
      const r = await http.get('/weft/workflows/slow-1/result');
      return r.status === 200 ? r : null;
    }, 'slow-1 cancelled');
    expect(res!.body).toMatchObject({ done: true, status: 'cancelled', error: { message: 'customer changed their mind' } });
    expect((await http.post('/weft/workflows/slow-1/cancel').type('json').expect(409)).body.code).toBe('WEFT_WORKFLOW_NOT_RUNNING');
  });

  it('honours start options: delayed start, reject-duplicate', async () => {
    await http.post('/weft/workflows').send({ type: 'echo', workflowId: 'later-1', startAfter: '1h', executionTimeout: '2h' }).expect(201);
    expect((await http.get('/weft/workflows/later-1').expect(200)).body.status).toBe('pending');
    const dup = await http.post('/weft/workflows').send({ type: 'echo', workflowId: 'later-1', idPolicy: 'reject-duplicate' }).expect(409);
    expect(dup.body).toEqual({ statusCode: 409, code: 'WEFT_WORKFLOW_ALREADY_STARTED', message: expect.stringContaining('later-1') });
    // return-existing (default) answers with the same id
    await http.post('/weft/workflows').send({ type: 'echo', workflowId: 'later-1' }).expect(201, { workflowId: 'later-1' });
  });

  it('maps unknown ids and types to 404', async () => {
    const missing = await http.get('/weft/workflows/does-not-exist').expect(404);
    expect(missing.body).toEqual({ statusCode: 404, code: 'WEFT_WORKFLOW_NOT_FOUND', message: expect.any(String) });
    expect((await http.get('/weft/workflows/does-not-exist/result').expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
    expect((await http.post('/weft/workflows/does-not-exist/cancel').type('json').expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
    const type = await http.post('/weft/workflows').send({ type: 'nope' }).expect(404);
    expect(type.body.code).toBe('WEFT_WORKFLOW_TYPE_NOT_REGISTERED');
  });

  it.each([
    ['no type', {}, 'WEFT_INVALID_ARGUMENT'],
    ['a non-object body', [1, 2], 'WEFT_INVALID_ARGUMENT'],
    ['an unknown field', { type: 'echo', colour: 'red' }, 'WEFT_INVALID_ARGUMENT'],
    ['a bad idPolicy', { type: 'echo', idPolicy: 'sometimes' }, 'WEFT_INVALID_ARGUMENT'],
    ['a bad duration', { type: 'echo', startAfter: 'soon' }, 'WEFT_INVALID_DURATION'],
    ['a bad startAt', { type: 'echo', startAt: 'tomorrow-ish' }, 'WEFT_INVALID_ARGUMENT'],
    ['a too-long id', { type: 'echo', workflowId: 'x'.repeat(300) }, 'WEFT_INVALID_WORKFLOW_ID'],
    ['a non-string id', { type: 'echo', workflowId: 42 }, 'WEFT_INVALID_WORKFLOW_ID'],
  ])('rejects a start with %s: 400', async (_what, body, code) => {
    const res = await http.post('/weft/workflows').send(body).expect(400);
    expect(res.body).toEqual({ statusCode: 400, code, message: expect.any(String) });
  });

  it.each([
    ['/weft/workflows?status=sleeping', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows?limit=abc', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows?limit=0', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows?cursor=garbage', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows?colour=red', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows/echo-1/result?timeout=2m', 'WEFT_INVALID_ARGUMENT'],
    ['/weft/workflows/echo-1/result?timeout=whenever', 'WEFT_INVALID_DURATION'],
  ])('rejects GET %s: 400', async (url, code) => {
    expect((await http.get(url).expect(400)).body.code).toBe(code);
  });

  it('signal, update, query and ownership routes reach the engine; typed errors map to HTTP', async () => {
    await http.post('/weft/workflows').send({ type: 'gate', input: {}, workflowId: 'gate-1' }).expect(201);
    const updated = await http.post('/weft/workflows/gate-1/update/limit').send({ args: 7, timeout: '5s' }).expect(200);
    expect(updated.body).toEqual({ workflowId: 'gate-1', update: 'limit', result: { limit: 7 } });
    const failed = await http.post('/weft/workflows/gate-1/update/limit').send({ args: 'x', timeout: '5s' }).expect(422);
    expect(failed.body.code).toBe('WEFT_UPDATE_FAILED');
    expect((await http.get('/weft/workflows/gate-1/query/state').expect(200)).body.result).toEqual({ open: false, limit: 7 });
    expect((await http.get('/weft/workflows/gate-1/query/nope').expect(404)).body.code).toBe('WEFT_UNKNOWN_HANDLER');
    const own = await http.get('/weft/workflows/gate-1/ownership').expect(200);
    expect(own.body).toMatchObject({ workflowId: 'gate-1', mode: 'none' });
    await http.post('/weft/workflows/gate-1/signal/open').send({}).expect(202);
    expect((await http.get('/weft/workflows/gate-1/result?timeout=10s').expect(200)).body).toMatchObject({ output: { limit: 7 } });
    expect((await http.post('/weft/workflows/gate-1/signal/open').send({}).expect(409)).body.code).toBe('WEFT_WORKFLOW_NOT_RUNNING');
    expect((await http.post('/weft/workflows/none-such/signal/open').send({}).expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
  });

  it('events: GET /:id/events/:key answers the value, or waits up to ?timeout= for it', async () => {
    await http.post('/weft/workflows').send({ type: 'publisher', input: {}, workflowId: 'pub-1' }).expect(201);
    const stage = await http.get('/weft/workflows/pub-1/events/stage?timeout=10s').expect(200);
    expect(stage.body).toEqual({ workflowId: 'pub-1', key: 'stage', value: { n: 1 } });
    expect((await http.get('/weft/workflows/pub-1/events/done').expect(200)).body.value).toBeNull();
    const done = http.get('/weft/workflows/pub-1/events/done?timeout=10s').then((r) => r);
    await http.post('/weft/workflows/pub-1/signal/go').send({}).expect(202);
    expect((await done).body).toEqual({ workflowId: 'pub-1', key: 'done', value: true });
    expect((await http.get('/weft/workflows/pub-1/events/done?timeout=2m').expect(400)).body.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await http.get('/weft/workflows/none-such/events/x').expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
    const described = await http.get('/weft/workflows/pub-1').expect(200);
    expect(described.body.events.map((e: { key: string }) => e.key)).toEqual(['done', 'stage']);
    // What the dashboard's workflow page shows in its Events card.
    const timeline = await http.get('/weft/workflows/pub-1/timeline').expect(200);
    expect(timeline.body.events.map((e: { key: string; value: unknown }) => [e.key, e.value])).toEqual([
      ['done', true],
      ['stage', { n: 1 }],
    ]);
    expect(timeline.body.eventsTotal).toBe(2);
  });

  it('streams: GET /:id/streams/:key sends server-sent events until the close; Last-Event-ID resumes', async () => {
    await http.post('/weft/workflows').send({ type: 'streamer', input: {}, workflowId: 'str-1' }).expect(201);
    const all = http
      .get('/weft/workflows/str-1/streams/out')
      .buffer(true)
      .then((r) => r);
    await http.post('/weft/workflows/str-1/signal/go').send({}).expect(202);
    const res = await all;
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = (res.text as string)
      .trim()
      .split('\n\n')
      .map((block) => Object.fromEntries(block.split('\n').map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 2)])));
    expect(events.map((e) => [e.event, e.id, JSON.parse(e.data).value])).toEqual([
      ['entry', '0', 'a'],
      ['entry', '1', { b: 2 }],
      ['end', '1', undefined], // the offset read up to: a client that reconnects resumes after it
    ]);
    const resumed = await http.get('/weft/workflows/str-1/streams/out').set('Last-Event-ID', '0').buffer(true);
    expect(resumed.text).not.toContain('id: 0');
    expect(resumed.text).toContain('id: 1');
    const from = await http.get('/weft/workflows/str-1/streams/out?from=1').buffer(true);
    expect(from.text).toContain('id: 1');
    expect(from.text).not.toContain('id: 0');
    expect((await http.get('/weft/workflows/str-1/streams/out?from=-1').expect(400)).body.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await http.get('/weft/workflows/none-such/streams/out').expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
    // What the dashboard's Streams card lists (and tails over the route above).
    const timeline = await http.get('/weft/workflows/str-1/timeline').expect(200);
    expect([timeline.body.streams, timeline.body.streamsTotal]).toEqual([[{ key: 'out', entries: 2, closed: true }], 1]);
  });

  it('serves Prometheus metrics at /metrics', async () => {
    const res = await http.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    for (const outcome of ['acquired', 'takeover', 'lost_race', 'deposed', 'backoff_skipped']) {
      expect(res.text).toContain(`weft_workflow_claim_attempts_total{outcome="${outcome}"}`);
    }
    for (const name of [
      'weft_workflow_claims_active',
      'weft_workflow_claim_renewal_failures_total',
      'weft_workflows_started_total',
      'weft_workflows_finished_total',
      'weft_step_duration_seconds',
      'weft_workflows_parked',
      'weft_renewal_pass_duration_seconds',
    ]) {
      expect(res.text).toContain(`# TYPE ${name} `);
    }
    expect(res.text).not.toMatch(/workflow_?id=/i);
  });
});

describe('Weft HTTP API with forRootAsync and a custom prefix', () => {
  let tdb: TestDatabase;
  let app: INestApplication;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_prefix');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRootAsync({ useFactory: () => base(tdb), http: { prefix: '/admin/weft/' } })],
      providers: [EchoWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('routes under the prefix; /metrics stays off unless enabled', async () => {
    const http = request(app.getHttpServer());
    await http.post('/admin/weft/workflows').send({ type: 'echo', input: 'hi', workflowId: 'p-1' }).expect(201);
    await http.get('/admin/weft/workflows/p-1/result?timeout=10s').expect(200);
    const notOurs = await http.get('/weft/workflows/p-1').expect(404);
    expect(notOurs.body.code).toBeUndefined(); // Nest's own "no route" 404
    await http.get('/metrics').expect(404);
  });
});
