import 'reflect-metadata';
import { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { AppModule } from '../src/app.module.js';
import { demoConfig, loadDemoConfig } from '../src/config/demo.config.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { order } from './support/demo.js';
import { waitFor } from './support/engine.js';

// The demo's order-fulfilment workflow end to end on PostgreSQL, through its HTTP routes, on the
// paths nest-demo.e2e-spec.ts does not take: an approval given to another process after a
// restart, an approval that never comes, a payment gateway that never answers. Each test boots
// the demo with its own configuration, given as a checked environment (no process.env).

interface Demo {
  app: INestApplication;
  http: ReturnType<typeof request>;
}

interface OrderStatus {
  status: string;
  stage: string;
  result: Record<string, unknown> | null;
  steps: Array<{ name: string; status: string; attempts: number }>;
  /** The demo's own row of the order (demo.orders). */
  record: { status: string; chargeId: string | null; trackingNumber: string | null; writes: number } | null;
}

describe("the demo's order workflow", () => {
  let tdb: TestDatabase;
  const running: INestApplication[] = [];

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_demo_orders');
  });
  afterEach(async () => {
    for (const app of running.splice(0)) await app.close();
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  async function boot(env: Record<string, string>): Promise<Demo> {
    const config = loadDemoConfig({ DATABASE_URL: tdb.url, WEFT_API_KEY: 'demo-orders-key', DEMO_PACKING_DELAY: '50ms', ...env });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule] })
      .overrideProvider(demoConfig.KEY)
      .useValue(config)
      .compile();
    const app = moduleRef.createNestApplication({ logger: false });
    running.push(app);
    await app.init();
    return { app, http: request(app.getHttpServer()) };
  }

  async function stop({ app }: Demo): Promise<void> {
    running.splice(running.indexOf(app), 1);
    await app.close();
  }

  const statusOf = async ({ http }: Demo, orderId: string) => (await http.get(`/orders/${orderId}`).expect(200)).body as OrderStatus;

  async function settled(demo: Demo, orderId: string): Promise<OrderStatus> {
    let last: OrderStatus | undefined;
    await waitFor(async () => (last = await statusOf(demo, orderId)).status === 'completed', `order ${orderId} completed`, 30_000);
    return last!;
  }

  const stepNames = (s: OrderStatus) => s.steps.map((step) => step.name);

  it('a large order waits for approval across a restart: another app approves it and it ships', async () => {
    const env = { DEMO_APPROVAL_THRESHOLD: '1', DEMO_APPROVAL_TIMEOUT: '1h', DEMO_PAYMENT_FAILURE_RATE: '0' };
    const first = await boot(env);
    await first.http.post('/orders').send(order('o-restart')).expect(201);
    await waitFor(async () => (await statusOf(first, 'o-restart')).stage === 'awaiting-approval', 'awaiting approval');
    await stop(first);

    const second = await boot(env);
    // The second app knows the order from what the first recorded.
    expect((await statusOf(second, 'o-restart')).stage).toBe('awaiting-approval');
    await second.http.post('/orders/o-restart/approve').send({ by: 'ops@example.com' }).expect(202);
    const done = await settled(second, 'o-restart');
    expect(done.result).toMatchObject({ status: 'shipped', chargeId: expect.stringMatching(/^ch_/) });
    // Reserved and charged once, by the first app; approved, packed and shipped by the second.
    expect(done.steps).toEqual(
      [
        'WarehouseService.reserve',
        'PaymentsService.charge',
        'OrderLedger.recordCharge', // a transactional step: the order's row, with the record
        'condition',
        'approve', // the signal
        'sleep',
        'shipment', // the child workflow...
        'order-o-restart/6', // ...and its result, a durable message
        'OrderLedger.recordOutcome',
      ].map((name) => ({ name, status: 'completed', attempts: 1 })),
    );
    // The row: placed by the request's transaction, then one write per transactional step, across the restart.
    expect(done.record).toEqual({
      status: 'shipped',
      chargeId: done.result!.chargeId,
      trackingNumber: done.result!.trackingNumber,
      writes: 3,
    });
  });

  it('an approval that never comes: the order expires, refunds the charge and releases the stock', async () => {
    const demo = await boot({ DEMO_APPROVAL_THRESHOLD: '1', DEMO_APPROVAL_TIMEOUT: '200ms', DEMO_PAYMENT_FAILURE_RATE: '0' });
    await demo.http.post('/orders').send(order('o-expired')).expect(201);
    const done = await settled(demo, 'o-expired');
    expect(done.result).toEqual({ status: 'expired', chargeId: expect.stringMatching(/^ch_/), reason: 'not approved within 200ms' });
    expect(stepNames(done)).toEqual([
      'WarehouseService.reserve',
      'PaymentsService.charge',
      'OrderLedger.recordCharge',
      'condition', // timed out
      'PaymentsService.refund',
      'WarehouseService.release',
      'OrderLedger.recordOutcome',
    ]);
    expect(done.record).toMatchObject({ status: 'expired', trackingNumber: null, writes: 3 });
  });

  it('a payment gateway that always times out: five attempts with backoff, then the stock is released', async () => {
    const demo = await boot({ DEMO_PAYMENT_FAILURE_RATE: '1' });
    await demo.http.post('/orders').send(order('o-unpaid')).expect(201);
    const done = await settled(demo, 'o-unpaid');
    expect(done.result).toEqual({ status: 'payment-failed', reason: expect.stringContaining('payment gateway timed out') });
    expect(done.steps.map(({ name, status, attempts }) => [name, status, attempts])).toEqual([
      ['WarehouseService.reserve', 'completed', 1],
      ['PaymentsService.charge', 'failed', 5],
      ['WarehouseService.release', 'completed', 1],
      ['OrderLedger.recordOutcome', 'completed', 1],
    ]);
    expect(done.record).toEqual({ status: 'payment-failed', chargeId: null, trackingNumber: null, writes: 2 });
  });
});
