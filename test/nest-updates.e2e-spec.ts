import 'reflect-metadata';
import { INestApplication, Injectable } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  currentWorkflowContext,
  QueryHandler,
  Step,
  UpdateHandler,
  UpdateValidator,
  WeftEngine,
  WeftModule,
  Workflow,
  WorkflowContext,
} from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

// Updates declared with decorators (DESIGN 9.3, 9.8): an async @UpdateHandler that calls a @Step
// provider through this.ctx, validators as @UpdateValidator and as the handler's `validate` option,
// and updateWithStart over HTTP (POST <prefix>/workflows/update-with-start).

@Injectable()
class Pricing {
  calls = 0;
  @Step()
  async quote(item: string): Promise<number> {
    this.calls++;
    return item.length * 10;
  }
}

@Workflow('cart')
class CartWorkflow {
  declare ctx: WorkflowContext;
  items: Array<{ item: string; price: number }> = [];
  closed = false;

  constructor(private readonly pricing: Pricing) {}

  async run() {
    await this.ctx.condition(() => this.closed);
    return this.items;
  }

  @UpdateHandler('add')
  async add(item: string) {
    const price = await this.pricing.quote(item); // a recorded step: the handler runs in the workflow's context
    this.items.push({ item, price });
    return { count: this.items.length, total: this.items.reduce((t, i) => t + i.price, 0), ctx: currentWorkflowContext() === this.ctx };
  }

  @UpdateValidator('add')
  checkAdd(item: unknown) {
    if (typeof item !== 'string' || item.length === 0) throw new TypeError('item must be a non-empty string');
    if (this.closed) throw new Error('the cart is closed');
  }

  @UpdateHandler('close', {
    validate(this: CartWorkflow) {
      if (this.items.length === 0) throw new RangeError('an empty cart cannot be closed');
    },
  })
  close() {
    this.closed = true;
    return this.items.length;
  }

  @QueryHandler('items') list() {
    return this.items;
  }
}

describe('updates declared with decorators, and updateWithStart over HTTP', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let engine: WeftEngine;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_updates');
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0, http: true }),
      ],
      providers: [CartWorkflow, Pricing],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
    engine = app.get(WeftEngine);
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('starts the cart and adds to it in one call; a second call finds it; validators refuse with 422 and leave nothing', async () => {
    const first = await http
      .post('/weft/workflows/update-with-start')
      .send({ type: 'cart', workflowId: 'cart-1', update: 'add', args: 'apple', timeout: '20s' })
      .expect(200);
    expect(first.body).toEqual({ workflowId: 'cart-1', update: 'add', result: { count: 1, total: 50, ctx: true } });
    const second = await http
      .post('/weft/workflows/update-with-start')
      .send({ type: 'cart', workflowId: 'cart-1', update: 'add', args: 'kiwi' })
      .expect(200);
    expect(second.body.result).toEqual({ count: 2, total: 90, ctx: true });
    expect(app.get(Pricing).calls).toBe(2);

    const rejected = await http.post('/weft/workflows/cart-1/update/add').send({ args: '' }).expect(422);
    expect(rejected.body).toMatchObject({ code: 'WEFT_UPDATE_REJECTED' });
    expect(rejected.body.message).toContain('item must be a non-empty string');
    const updates = await tdb.query(`SELECT status FROM weft.weft_messages WHERE workflow_id = 'cart-1' AND kind = 'update'`);
    expect(updates).toEqual([{ status: 'done' }, { status: 'done' }]);

    const steps = (await engine.describe('cart-1')).history.filter((op) => op.kind === 'step').map((op) => op.name);
    expect(steps).toEqual(['Pricing.quote', 'Pricing.quote']);
    expect(await engine.update('cart-1', 'close', null, { timeout: '10s' })).toBe(2);
    await expect(engine.handle('cart-1').result({ timeout: '10s' })).resolves.toEqual([
      { item: 'apple', price: 50 },
      { item: 'kiwi', price: 40 },
    ]);
  });

  it("the handler's validate option: an empty cart cannot be closed (422), the update leaves no history", async () => {
    await engine.start('cart', null, { workflowId: 'cart-2' });
    const before = (await engine.describe('cart-2')).history.length;
    const res = await http
      .post('/weft/workflows/update-with-start')
      .send({ type: 'cart', workflowId: 'cart-2', update: 'close' })
      .expect(422);
    expect(res.body).toMatchObject({ code: 'WEFT_UPDATE_REJECTED' });
    expect(res.body.message).toContain('an empty cart cannot be closed');
    expect((await engine.describe('cart-2')).history).toHaveLength(before);
    expect(await tdb.query(`SELECT id FROM weft.weft_messages WHERE workflow_id = 'cart-2'`)).toEqual([]);
    await engine.cancel('cart-2');
  });

  it('refuses a bad request before anything is written (400, 404)', async () => {
    const noId = await http.post('/weft/workflows/update-with-start').send({ type: 'cart', update: 'add', args: 'x' }).expect(400);
    expect(noId.body.message).toContain('workflowId');
    await http.post('/weft/workflows/update-with-start').send({ type: 'cart', workflowId: 'cart-3' }).expect(400);
    await http.post('/weft/workflows/update-with-start').send({ type: 'cart', workflowId: 'cart-3', update: 'add', extra: 1 }).expect(400);
    const unknown = await http
      .post('/weft/workflows/update-with-start')
      .send({ type: 'cart', workflowId: 'cart-3', update: 'nope' })
      .expect(404);
    expect(unknown.body).toMatchObject({ code: 'WEFT_UNKNOWN_HANDLER' });
    expect(await tdb.query(`SELECT id FROM weft.weft_workflows WHERE id = 'cart-3'`)).toEqual([]);
  });
});
