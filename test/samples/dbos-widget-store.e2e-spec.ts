// A port of DBOS's dbos-demo-apps `typescript/widget-store` checkout and its tests to Weft, on
// @weft/nest/testing: the checkout workflow reserves inventory, creates an order, publishes the
// payment id as an event (DBOS.setEvent: ctx.setEvent), waits for the payment notification
// (DBOS.recv: ctx.waitForSignal with the sample's 120 s timeout), then marks the order paid and
// starts the dispatch workflow, or cancels the order and returns the inventory; last it publishes
// the order id. The HTTP handlers of the sample read the events with DBOS.getEvent
// (engine.getEvent). The sample's unit test replaces the shop's database steps with mocks and
// checks their calls; here the steps are real recorded steps over an in-memory shop whose calls
// the test reads, and the events and the wait are real (docs/events-and-streams.md).
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Step, WeftEngine, Workflow, type WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';

const PAYMENT_TOPIC = 'payment';
const PAYMENT_ID_EVENT = 'payment_url';
const ORDER_ID_EVENT = 'order_url';

enum OrderStatus {
  PENDING = 0,
  DISPATCHED = 1,
  PAID = 2,
  CANCELLED = -1,
}

interface Order {
  order_id: number;
  order_status: OrderStatus;
  progress_remaining: number;
}

/** The shop's database operations (the sample's knex transactions), as steps; `calls` is what its unit test's mocks saw. */
@Injectable()
class Shop {
  inventory = 100;
  readonly orders = new Map<number, Order>();
  readonly calls: Array<[string, ...unknown[]]> = [];
  private nextOrder = 1;

  @Step({ name: 'subtractInventory', retry: { maxAttempts: 1 } })
  async subtractInventory(): Promise<void> {
    this.calls.push(['subtractInventory']);
    if (this.inventory < 1) throw new Error('Insufficient Inventory');
    this.inventory--;
  }

  @Step({ name: 'undoSubtractInventory' })
  async undoSubtractInventory(): Promise<void> {
    this.calls.push(['undoSubtractInventory']);
    this.inventory++;
  }

  @Step({ name: 'createOrder' })
  async createOrder(): Promise<number> {
    this.calls.push(['createOrder']);
    const order_id = this.nextOrder++;
    this.orders.set(order_id, { order_id, order_status: OrderStatus.PENDING, progress_remaining: 10 });
    return order_id;
  }

  @Step({ name: 'markOrderPaid' })
  async markOrderPaid(orderId: number): Promise<void> {
    this.calls.push(['markOrderPaid', orderId]);
    this.orders.get(orderId)!.order_status = OrderStatus.PAID;
  }

  @Step({ name: 'errorOrder' })
  async errorOrder(orderId: number): Promise<void> {
    this.calls.push(['errorOrder', orderId]);
    this.orders.get(orderId)!.order_status = OrderStatus.CANCELLED;
  }

  @Step({ name: 'updateOrderProgress' })
  async updateOrderProgress(orderId: number): Promise<void> {
    const order = this.orders.get(orderId);
    if (order?.order_status !== OrderStatus.PAID) throw new Error(`No PAID order with ID ${orderId} found`);
    if (order.progress_remaining > 1) order.progress_remaining--;
    else Object.assign(order, { order_status: OrderStatus.DISPATCHED, progress_remaining: 0 });
  }

  called(name: string): Array<unknown[]> {
    return this.calls.filter(([n]) => n === name).map(([, ...args]) => args);
  }
}

@Workflow('checkout')
class CheckoutWorkflow {
  constructor(private readonly shop: Shop) {}

  async run(ctx: WorkflowContext): Promise<void> {
    // Reserve inventory, failing if none remains.
    try {
      await this.shop.subtractInventory();
    } catch (error) {
      ctx.logger.error(`Failed to update inventory: ${(error as Error).message}`);
      await ctx.setEvent(PAYMENT_ID_EVENT, null);
      return;
    }
    const orderID = await this.shop.createOrder();
    // The payment id (this workflow's id) for the checkout endpoint; then wait for the payment.
    await ctx.setEvent(PAYMENT_ID_EVENT, ctx.workflowId);
    const notification = await ctx.waitForSignal<string>(PAYMENT_TOPIC, { timeout: '120s' });
    if (notification && notification === 'paid') {
      await this.shop.markOrderPaid(orderID);
      await ctx.startWorkflow('dispatchOrder', orderID);
    } else {
      await this.shop.errorOrder(orderID);
      await this.shop.undoSubtractInventory();
    }
    // The order id, for the payment endpoint's redirect.
    await ctx.setEvent(ORDER_ID_EVENT, orderID);
  }
}

@Workflow('dispatchOrder')
class DispatchOrderWorkflow {
  constructor(private readonly shop: Shop) {}

  async run(ctx: WorkflowContext, orderId: number): Promise<void> {
    for (let i = 0; i < 10; i++) {
      await ctx.sleep('1s');
      await this.shop.updateOrderProgress(orderId);
    }
  }
}

/** The sample's two HTTP handlers (fastify there), as a service over the engine. */
@Injectable()
class CheckoutEndpoints {
  constructor(private readonly engine: WeftEngine) {}

  /** POST /checkout/:key: idempotently start the checkout, wait for its payment id. */
  async checkout(key: string): Promise<string> {
    const handle = await this.engine.start('checkout', null, { workflowId: key });
    const paymentID = await this.engine.getEvent<string | null>(handle.workflowId, PAYMENT_ID_EVENT, { timeout: '60s' });
    if (paymentID === null) throw new Error('Error starting checkout');
    return paymentID;
  }

  /** POST /payment_webhook/:key/:status: tell the checkout how the payment went, wait for its order id. */
  async paymentWebhook(key: string, status: string): Promise<number> {
    await this.engine.signal(key, PAYMENT_TOPIC, status);
    const orderID = await this.engine.getEvent<number>(key, ORDER_ID_EVENT, { timeout: '60s' });
    if (orderID === null) throw new Error('Error retrieving order ID');
    return orderID;
  }
}

@Module({ providers: [Shop, CheckoutWorkflow, DispatchOrderWorkflow, CheckoutEndpoints] })
class WidgetStoreModule {}

describe("DBOS's widget store checkout on the Weft testing kit", () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;
  let shop: Shop;
  let endpoints: CheckoutEndpoints;
  let n = 0;
  const key = () => `checkout-${process.pid}-${++n}`;
  const kinds = async (id: string) => (await env.history(id)).map((op) => `${op.kind}:${op.name}`);

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(), WidgetStoreModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
    shop = app.get(Shop);
    endpoints = app.get(CheckoutEndpoints);
  });
  afterEach(async () => app?.close());

  it('completes checkout when inventory is available and payment succeeds', async () => {
    const id = key();
    const paymentId = await endpoints.checkout(id);
    expect(paymentId).toBe(id); // the payment id event is the workflow id
    expect(shop.called('subtractInventory')).toHaveLength(1);
    expect(shop.called('createOrder')).toHaveLength(1);

    const orderId = await endpoints.paymentWebhook(id, 'paid');
    await env.result(id, { timeout: '10s' });
    expect(await kinds(id)).toContain(`waitForSignal:${PAYMENT_TOPIC}`); // it waited for the payment notification
    expect(shop.called('markOrderPaid')).toEqual([[orderId]]);
    const dispatch = (await env.history(id)).find((op) => op.kind === 'startWorkflow');
    expect(dispatch?.name).toBe('dispatchOrder'); // the dispatch workflow was started, with the order id
    const dispatchId = (dispatch?.result as { workflowId: string }).workflowId;
    expect((await env.describe(dispatchId)).input).toBe(orderId);
    expect(await env.engine.getEvent(id, ORDER_ID_EVENT)).toBe(orderId);
    expect(shop.called('errorOrder')).toEqual([]);
    expect(shop.called('undoSubtractInventory')).toEqual([]);
    expect(shop.inventory).toBe(99);

    await env.clock.advance('10s'); // the dispatch workflow's ten progress updates
    await env.result(dispatchId, { timeout: '10s' });
    expect(shop.orders.get(orderId)).toMatchObject({ order_status: OrderStatus.DISPATCHED, progress_remaining: 0 });
  });

  it('handles inventory subtraction failure and returns early', async () => {
    shop.inventory = 0;
    const id = key();
    await expect(endpoints.checkout(id)).rejects.toThrow('Error starting checkout');
    await env.result(id, { timeout: '10s' });
    expect(shop.called('subtractInventory')).toHaveLength(1);
    expect(await env.engine.getEvent(id, PAYMENT_ID_EVENT)).toBeNull(); // set, to null
    expect(shop.called('createOrder')).toEqual([]);
    expect(await kinds(id)).not.toContain(`waitForSignal:${PAYMENT_TOPIC}`);
    expect(shop.called('markOrderPaid')).toEqual([]);
    expect((await env.history(id)).filter((op) => op.kind === 'startWorkflow')).toEqual([]);
  });

  it('handles payment failure by cancelling the order and returning the inventory', async () => {
    const id = key();
    expect(await endpoints.checkout(id)).toBe(id);
    const orderId = await endpoints.paymentWebhook(id, 'failed');
    await env.result(id, { timeout: '10s' });
    expect(shop.called('subtractInventory')).toHaveLength(1);
    expect(shop.called('createOrder')).toHaveLength(1);
    expect(await kinds(id)).toContain(`waitForSignal:${PAYMENT_TOPIC}`);
    expect(shop.called('errorOrder')).toEqual([[orderId]]);
    expect(shop.called('undoSubtractInventory')).toHaveLength(1);
    expect(await env.engine.getEvent(id, ORDER_ID_EVENT)).toBe(orderId);
    expect(shop.called('markOrderPaid')).toEqual([]);
    expect((await env.history(id)).filter((op) => op.kind === 'startWorkflow')).toEqual([]);
    expect(shop.inventory).toBe(100);
  });

  it('handles a payment timeout (no notification within 120 s)', async () => {
    const id = key();
    expect(await endpoints.checkout(id)).toBe(id);
    await env.clock.advance('120s');
    await env.result(id, { timeout: '10s' });
    const orderId = await env.engine.getEvent<number>(id, ORDER_ID_EVENT);
    expect(shop.called('errorOrder')).toEqual([[orderId]]);
    expect(shop.called('undoSubtractInventory')).toHaveLength(1);
    expect(shop.called('markOrderPaid')).toEqual([]);
    expect((await env.history(id)).filter((op) => op.kind === 'startWorkflow')).toEqual([]);
  });

  it('starts one checkout per idempotency key, however often "buy now" is pressed', async () => {
    const id = key();
    const [a, b] = await Promise.all([endpoints.checkout(id), endpoints.checkout(id)]);
    expect([a, b]).toEqual([id, id]);
    expect(shop.called('subtractInventory')).toHaveLength(1);
    expect(shop.called('createOrder')).toHaveLength(1);
    await endpoints.paymentWebhook(id, 'paid');
  });
});
