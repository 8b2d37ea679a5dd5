import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ChildProcess, spawn } from 'node:child_process';
import request from 'supertest';
import { WeftEngine } from '@weft/nest';
import { DataSource } from 'typeorm';
import { AppModule } from '../src/app.module.js';
import { OrderLedger } from '../src/orders/order-ledger.service.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { order, setDemoEnv } from './support/demo.js';
import { waitFor, within } from './support/engine.js';
import { sourcePath, TS_NODE_ARGS } from './support/node-ts.js';

const API_KEY = 'demo-test-key';

describe('demo app (src/): orders, health, metrics, weft API', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let restoreEnv: (() => void) | undefined;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_demo');
    restoreEnv = setDemoEnv({ DATABASE_URL: tdb.url, WEFT_API_KEY: API_KEY, CARRIER_POLL_EVERY: '5ms' });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
  });

  afterAll(async () => {
    await app?.close();
    restoreEnv?.();
    await tdb?.drop();
  });

  async function settled(orderId: string) {
    let body: Record<string, unknown> = {};
    await waitFor(async () => {
      body = (await http.get(`/orders/${orderId}`).expect(200)).body;
      return body.status === 'completed';
    }, `order ${orderId} completed`);
    return body;
  }

  it('places an order that is reserved, charged, packed and shipped', async () => {
    const placed = await http.post('/orders').send(order('o-1')).expect(201);
    expect(placed.body).toEqual({ orderId: 'o-1', workflowId: 'order-o-1', statusUrl: '/orders/o-1' });
    const done = await settled('o-1');
    expect(done).toMatchObject({ stage: 'shipped', result: { status: 'shipped', chargeId: expect.stringMatching(/^ch_/) } });
    expect((done.steps as Array<{ name: string }>).map((s) => s.name)).toEqual([
      'WarehouseService.reserve',
      'PaymentsService.charge',
      'OrderLedger.recordCharge', // transactional steps: the demo's orders row commits with the record
      'sleep',
      'shipment', // the shipping child workflow starts...
      'order-o-1/4', // ...and its result comes back as a durable message
      'OrderLedger.recordOutcome',
    ]);
    // Placed by the request's transaction, then written once by each transactional step.
    const result = done.result as { chargeId: string; trackingNumber: string };
    expect(done.record).toEqual({ status: 'shipped', chargeId: result.chargeId, trackingNumber: result.trackingNumber, writes: 3 });
    expect((await http.get('/weft/workflows/order-o-1%2F4').set('x-api-key', API_KEY).expect(200)).body).toMatchObject({
      type: 'shipment',
      status: 'completed',
    });
  });

  it("an order's row and its workflow commit together: a request transaction that rolls back leaves neither", async () => {
    const engine = app.get(WeftEngine);
    const dataSource = app.get(DataSource);
    const rowsOf = async (id: string) =>
      ((await dataSource.query('SELECT count(*)::int AS n FROM demo.orders WHERE order_id = $1', [id])) as Array<{ n: number }>)[0]!.n;
    await expect(
      dataSource.transaction(async (manager) => {
        await app.get(OrderLedger).place(manager, 'o-rolled-back', 100);
        await engine.start('order-fulfilment', { orderId: 'o-rolled-back' }, { workflowId: 'order-o-rolled-back', manager });
        throw new Error('the request failed after the start');
      }),
    ).rejects.toThrow('the request failed after the start');
    await http.get('/orders/o-rolled-back').expect(404);
    expect(await rowsOf('o-rolled-back')).toBe(0);
    // The same calls in a transaction that commits: both exist (the route does exactly this).
    await http.post('/orders').send(order('o-committed')).expect(201);
    expect(await rowsOf('o-committed')).toBe(1);
    expect((await settled('o-committed')).status).toBe('completed');
  });

  it('a large order waits for approval (signal handler + condition), visible through the status query', async () => {
    await http
      .post('/orders')
      .send(order('o-big', { amount: 75_000 }))
      .expect(201);
    await waitFor(async () => (await http.get('/orders/o-big').expect(200)).body.stage === 'awaiting-approval', 'awaiting approval');
    // An approver PostgreSQL cannot store is refused at the route; it used to stall the order.
    for (const by of ['ops\u0000@example.com', 'ops\ud800']) {
      expect((await http.post('/orders/o-big/approve').send({ by }).expect(400)).body.code).toBe('WEFT_PAYLOAD_NOT_SERIALIZABLE');
    }
    await http.post('/orders/o-big/approve').send({ by: 'ops@example.com' }).expect(202);
    expect(await settled('o-big')).toMatchObject({ stage: 'shipped', result: { status: 'shipped' } });
  });

  it('compensates: a declined card releases the stock; an undeliverable address refunds', async () => {
    await http
      .post('/orders')
      .send(order('o-declined', { amount: 5_000_000 }))
      .expect(201);
    await http
      .post('/orders')
      .send(order('o-nowhere', { address: 'Nowhere Lane' }))
      .expect(201);
    expect(await settled('o-declined')).toMatchObject({ stage: 'payment-failed' });
    expect(await settled('o-nowhere')).toMatchObject({ stage: 'refunded' });
  });

  it('refuses bodies its DTOs do not allow, one rule per field, and maps unknown orders to 404', async () => {
    const refused = async (path: string, body: object) => {
      const { body: answer } = await http.post(path).send(body).expect(400);
      expect(answer).toEqual({ statusCode: 400, code: 'DEMO_INVALID_REQUEST', message: expect.any(String) });
      return answer.message as string;
    };
    expect(await refused('/orders', { items: [] })).toBe(
      'Invalid request body: items must contain at least 1 elements; amount must be an integer number; address must be a string.',
    );
    const nested = await refused('/orders', { ...order('o-bad'), items: [{ sku: 'tea', quantity: 0 }], address: '  ', coupon: 'x' });
    expect(nested).toBe(
      'Invalid request body: property coupon should not exist; items.0.quantity must not be less than 1; address should not be empty.',
    );
    expect(await refused('/orders', { ...order('o bad'), amount: '1250' })).toMatch(/orderId must be 1 to 64 .*amount must be an integer/);
    expect(await refused('/orders', [order('o-array')])).toMatch(
      /^Invalid request body: property 0 should not exist; items must be an array/,
    );
    expect(await refused('/orders/o-1/approve', { by: 5 })).toBe('Invalid request body: by must be a string.');
    expect(await refused('/orders/o-1/approve', { by: 'ops', note: 'y' })).toBe('Invalid request body: property note should not exist.');
    // Nothing was started for a refused order.
    await http.get('/orders/o-bad').expect(404);
    expect((await http.get('/orders/missing').expect(404)).body.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
  });

  it('declares the nightly report and the heartbeat as schedules; a triggered report counts orders by status', async () => {
    const engine = app.get(WeftEngine);
    const schedules = await engine.schedules.list();
    expect(schedules.map((s) => [s.id, s.source, s.cron ?? s.everyMs])).toEqual([
      ['heartbeat', 'decorator', 60_000],
      ['nightly-report', 'decorator', '0 3 * * *'],
    ]);
    const { workflowId } = await engine.schedules.trigger('nightly-report');
    const report = await engine.result<{ at: string; orders: Record<string, number> }>(workflowId, { timeout: '10s' });
    expect(report.at).toBe(workflowId.slice('nightly-report@'.length));
    expect(Object.values(report.orders).every((n) => Number.isInteger(n))).toBe(true);
  });

  it('runs one carrier poller that continues as new every 50 polls, its history never longer than one run', async () => {
    const engine = app.get(WeftEngine);
    const poller = engine.handle('carrier-poller');
    await waitFor(async () => ((await poller.describe().catch(() => null))?.runNumber ?? 0) >= 3, 'the poller in its third run', 30_000);
    const d = await poller.describe();
    expect(d.status).toBe('running');
    // Two operations per poll (the step and the sleep), 50 polls per run.
    expect(d.history.length).toBeLessThanOrEqual(100);
    expect((d.input as { cursor: number }).cursor).toBeGreaterThan(0);
  });

  it('serves /health, /metrics and the weft API', async () => {
    await waitFor(async () => (await http.get('/health')).status === 200, 'health 200');
    expect((await http.get('/metrics').set('x-api-key', API_KEY).expect(200)).text).toContain('weft_workflow_claim_attempts_total');
    const list = await http.get('/weft/workflows?type=order-fulfilment&status=completed').set('x-api-key', API_KEY).expect(200);
    expect(list.body.items.length).toBeGreaterThanOrEqual(3);
  });

  it('guards /weft/* and /metrics with x-api-key; its own routes and /health stay open', async () => {
    const rejected = { statusCode: 401, code: 'DEMO_API_KEY_REJECTED', message: expect.any(String) };
    expect((await http.get('/weft/workflows').expect(401)).body).toEqual(rejected);
    expect((await http.get('/weft/workflows').set('x-api-key', `${API_KEY}x`).expect(401)).body).toEqual(rejected);
    await http.post('/weft/workflows/order-o-1/cancel').set('x-api-key', 'wrong').expect(401);
    await http.get('/metrics').expect(401);
    await http.get('/orders/o-1').expect(200);
    await http.get('/health').expect(200);
  });
});

describe('demo app as a process', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_demo_proc');
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  function runDemo(env: Record<string, string>): {
    proc: ChildProcess;
    out: () => string;
    err: () => string;
    exited: Promise<{ code: number | null; signal: string | null }>;
  } {
    const main = sourcePath('src/main.ts');
    const proc = spawn(process.execPath, [...TS_NODE_ARGS, main], {
      env: { ...process.env, NO_COLOR: '1', PORT: '0', ...env },
      stdio: 'pipe',
    });
    let out = '';
    let err = '';
    proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
      proc.on('exit', (code, signal) => resolve({ code, signal })),
    );
    return { proc, out: () => out, err: () => err, exited };
  }

  it('shuts down cleanly on SIGTERM: engine disposed before exit, the parked order still running', async () => {
    const demo = runDemo({
      DATABASE_URL: tdb.url,
      WEFT_SCHEMA: 'weft',
      DEMO_PACKING_DELAY: '1h',
      DEMO_PAYMENT_FAILURE_RATE: '0',
      WEFT_API_KEY: '',
    });
    try {
      const url = (await waitFor(() => /listening on (http:\/\/\S+)/.exec(demo.out())?.[1], 'the demo to listen', 30_000, 50))!;
      // No WEFT_API_KEY: a generated key, logged once, opens the Weft routes.
      const keys = [...demo.out().matchAll(/x-api-key: (\S+)/g)].map((m) => m[1]);
      expect(keys).toHaveLength(1);
      await request(url).get('/weft/workflows').expect(401);
      await request(url).get('/weft/workflows').set('x-api-key', keys[0]).expect(200);
      await request(url).post('/orders').send(order('o-term')).expect(201);
      await waitFor(async () => (await request(url).get('/orders/o-term')).body.stage === 'packing', 'the order to be packing');
      demo.proc.kill('SIGTERM');
      // Nest runs the shutdown hooks, then re-raises the signal.
      expect(await within('the demo to exit on SIGTERM', 30_000, demo.exited)).toEqual({ code: null, signal: 'SIGTERM' });
    } finally {
      demo.proc.kill('SIGKILL');
    }
    expect(demo.out()).toContain('Engine disposed');
    const rows = await tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = 'order-o-term'`);
    expect(rows[0].status).toBe('running');
  });

  it('refuses a bad environment before it connects: one DEMO_CONFIG_INVALID line, exit 1, without the password', async () => {
    const demo = runDemo({ DATABASE_URL: 'mysql://weft:s3cret@127.0.0.1/orders', PORT: 'eighty', DEMO_PAYMENT_FAILURE_RATE: '2' });
    expect((await within('the demo to exit', 30_000, demo.exited)).code).toBe(1);
    expect(demo.err().trim().split('\n')).toEqual([
      "DEMO_CONFIG_INVALID: The demo's environment is invalid: DATABASE_URL must be a postgres:// or postgresql:// URL; " +
        'PORT must be an integer from 0 to 65535 (got "eighty"); DEMO_PAYMENT_FAILURE_RATE must be a number from 0 to 1 (got "2"). ' +
        'Fix or unset these variables (README, "The demo\'s configuration").',
    ]);
    expect(demo.err() + demo.out()).not.toContain('s3cret');
  });

  it('prints a WeftError at start-up as one line and exits 1, without the password', async () => {
    const demo = runDemo({ DATABASE_URL: 'postgres://weft:s3cret@127.0.0.1:1/nowhere' });
    expect((await within('the demo to exit', 30_000, demo.exited)).code).toBe(1);
    const lines = demo.err().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^WEFT_DATABASE_UNAVAILABLE: /);
    expect(demo.err() + demo.out()).not.toContain('s3cret');
  });
});
