import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { WorkflowContext } from '../common/types.js';
import { WeftEngine } from '../engine/engine.js';
import { Step } from '../nest/decorators/step.decorator.js';
import { SignalHandler } from '../nest/decorators/handler.decorators.js';
import { Workflow } from '../nest/decorators/workflow.decorator.js';
import { WeftTestEnvironment } from './environment.js';
import { weftMatchers, type WeftMatchers } from './matchers.js';
import { WeftTestingModule } from './testing.module.js';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Assertion<T> extends WeftMatchers<T> {}
}
expect.extend(weftMatchers);

/** The real payment provider: the tests replace it, and must still see recorded steps. */
@Injectable()
class PaymentsService {
  readonly calls: string[] = [];
  failuresLeft = 0;

  @Step({ name: 'charge', retry: { maxAttempts: 4, initialInterval: '10m', backoffCoefficient: 2, maxInterval: '1h' } })
  async charge(orderId: string): Promise<string> {
    this.calls.push(`charge:${orderId}`);
    if (this.failuresLeft-- > 0) throw new Error('card network down');
    return `ch_${orderId}`;
  }

  @Step({ name: 'refund' })
  async refund(chargeId: string): Promise<string> {
    this.calls.push(`refund:${chargeId}`);
    return `re_${chargeId}`;
  }

  @Step({ name: 'reserve' })
  async reserve(orderId: string): Promise<string> {
    this.calls.push(`reserve:${orderId}`);
    return `rs_${orderId}`;
  }

  @Step({ name: 'release' })
  async release(reservation: string): Promise<void> {
    this.calls.push(`release:${reservation}`);
  }
}

/** A saga: reserve, charge (retried with backoff), then wait a day for shipping; compensate on failure. */
@Workflow('order-saga')
class OrderSaga {
  constructor(private readonly payments: PaymentsService) {}

  async run(ctx: WorkflowContext, orderId: string) {
    const reservation = await this.payments.reserve(orderId);
    try {
      const charge = await this.payments.charge(orderId);
      await ctx.sleep('1d');
      return { charge };
    } catch {
      await this.payments.release(reservation);
      return { compensated: true };
    }
  }
}

@Workflow('approval')
class ApprovalWorkflow {
  private approvedBy: string | null = null;
  constructor(private readonly payments: PaymentsService) {}

  async run(ctx: WorkflowContext, orderId: string) {
    const charge = await this.payments.charge(orderId);
    await ctx.sleep('30d');
    const ok = await ctx.condition(() => this.approvedBy !== null, { timeout: '7d' });
    if (!ok) return { refunded: await this.payments.refund(charge) };
    return { charge, approvedBy: this.approvedBy };
  }

  @SignalHandler('approve')
  approve(by: string) {
    this.approvedBy = by;
  }
}

@Module({ providers: [PaymentsService, OrderSaga, ApprovalWorkflow], exports: [PaymentsService] })
class OrdersModule {}

async function appWith(
  opts: Parameters<typeof WeftTestingModule.forRoot>[0] = {},
  override?: (b: ReturnType<typeof Test.createTestingModule>) => ReturnType<typeof Test.createTestingModule>,
): Promise<INestApplication> {
  let builder = Test.createTestingModule({ imports: [WeftTestingModule.forRoot(opts), OrdersModule] });
  if (override) builder = override(builder);
  const app = (await builder.compile()).createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('WeftTestingModule in Test.createTestingModule', () => {
  it('runs a saga whose retries back off for hours, compensating, in no real waiting', async () => {
    const app = await appWith();
    try {
      const env = app.get(WeftTestEnvironment);
      const payments = app.get(PaymentsService);
      payments.failuresLeft = 10; // every attempt fails: at most 10m, 20m and 40m of backoff, then compensation
      const h = await env.start('order-saga', 'o-1');
      await env.clock.advance('2h');
      expect(await env.result(h.workflowId)).toEqual({ compensated: true });
      expect(payments.calls).toEqual(['reserve:o-1', 'charge:o-1', 'charge:o-1', 'charge:o-1', 'charge:o-1', 'release:rs_o-1']);
      const history = await env.history(h.workflowId);
      expect(history).toHaveFailedStep('charge');
      expect(history).toHaveCompletedStep('release');
      expect(history.find((o) => o.name === 'charge')?.attempts).toBe(4);

      // Two failures, then success: the backoffs are 5-10m and 10-20m (half of it jitter).
      payments.failuresLeft = 2;
      const ok = await env.start('order-saga', 'o-2');
      await env.clock.advance('14m');
      expect(await ok.status()).toBe('running');
      expect(payments.calls.filter((c) => c === 'charge:o-2')).toHaveLength(2);
      await env.clock.advance('16m');
      expect(payments.calls.filter((c) => c === 'charge:o-2')).toHaveLength(3);
      await env.clock.advance('1d');
      expect(await env.result(ok.workflowId)).toEqual({ charge: 'ch_o-2' });
    } finally {
      await app.close();
    }
  });

  it('mockStep keeps step semantics: recorded once under its name, not run again when the run is replayed', async () => {
    // One parked run kept in memory: the second start evicts the first, whose wake replays it from storage.
    const app = await appWith({ weft: { maxCachedWorkflows: 1 } });
    try {
      const env = app.get(WeftTestEnvironment);
      const charged: string[] = [];
      env.mockStep(PaymentsService, 'charge', async (orderId: string) => {
        charged.push(orderId);
        return `mock_${orderId}`;
      });
      const first = await env.start('approval', 'a-1');
      const second = await env.start('approval', 'a-2');
      await env.clock.settle();
      expect(env.engine.healthSnapshot().liveWorkflows).toBe(1); // a-1 was evicted: its wake replays it
      await env.clock.advance('30d');
      await env.signal(first.workflowId, 'approve', 'ops');
      await env.signal(second.workflowId, 'approve', 'ops');
      expect(await env.result(first.workflowId)).toEqual({ charge: 'mock_a-1', approvedBy: 'ops' });
      expect(await env.result(second.workflowId)).toEqual({ charge: 'mock_a-2', approvedBy: 'ops' });
      expect(charged).toEqual(['a-1', 'a-2']); // replays returned the record
      expect(app.get(PaymentsService).calls).toEqual([]);
      const history = await env.history(first.workflowId);
      expect(history).toHaveCompletedStep('charge');
      expect(history).toHaveReceivedSignal('approve');
      expect(history.filter((o) => o.kind === 'step' && o.name === 'charge')).toHaveLength(1);
    } finally {
      await app.close();
    }
  });

  it('a provider replaced with overrideProvider().useValue() still records its @Step methods under their names', async () => {
    const fake = { charge: async (id: string) => `fake_${id}`, refund: async (id: string) => `fake_re_${id}` };
    const app = await appWith({}, (b) => b.overrideProvider(PaymentsService).useValue(fake));
    try {
      const env = app.get(WeftTestEnvironment);
      const h = await env.start('approval', 'f-1');
      await env.clock.advance('37d'); // no approval: refunded after the 7 days
      expect(await env.result(h.workflowId)).toEqual({ refunded: 'fake_re_fake_f-1' });
      const history = await env.history(h.workflowId);
      expect(history).toHaveCompletedStep('charge');
      expect(history).toHaveCompletedStep('refund');
      expect(history).not.toHaveReceivedSignal('approve');
    } finally {
      await app.close();
    }
  });

  it('autoSkip jumps to the next timer whenever every live workflow waits on one', async () => {
    const app = await appWith({ autoSkip: true });
    try {
      const env = app.get(WeftTestEnvironment);
      const before = env.clock.now().getTime();
      // 30 days of sleep and 7 of waiting for an approval that never comes: no advance at all.
      expect(await env.runWorkflow('approval', 's-1')).toEqual({ refunded: 're_ch_s-1' });
      expect(env.clock.now().getTime() - before).toBeGreaterThanOrEqual(37 * 86_400_000);
      expect(app.get(WeftEngine)).toBe(env.engine);
    } finally {
      await app.close();
    }
  });

  it('drops its schema when the app closes; the same forRoot() compiled again gets a schema of its own', async () => {
    const kit = WeftTestingModule.forRoot();
    const compile = async () => {
      const app = (await Test.createTestingModule({ imports: [kit, OrdersModule] }).compile()).createNestApplication({ logger: false });
      await app.init();
      return app;
    };
    const app = await compile();
    const env = app.get(WeftTestEnvironment);
    const url = env.databaseUrl;
    const schema = env.schema;
    await app.close();
    const again = await compile();
    expect(again.get(WeftTestEnvironment).schema).not.toBe(schema);
    await again.close();
    const { Client } = await import('pg');
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      expect((await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount).toBe(0);
    } finally {
      await c.end();
    }
  });
});
