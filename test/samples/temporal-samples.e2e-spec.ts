// Ports of two of Temporal's samples-typescript tests (sleep-for-days, timer-examples) to
// @weft/nest/testing, written for Weft: the assertions that need the clock to move hold, with no
// real waiting (docs/testing.md).
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { SignalHandler, Step, Workflow, type WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';

@Injectable()
class Mailer {
  @Step({ name: 'send-email' })
  async send(text: string): Promise<void> {
    throw new Error(`the real mailer is not for tests (${text})`);
  }
}

/** sleep-for-days: mail, sleep `days`, again, until the 'complete' signal. */
@Workflow('sleep-for-days')
class SleepForDays {
  private complete = false;
  constructor(private readonly mailer: Mailer) {}

  async run(ctx: WorkflowContext, days: number): Promise<string> {
    while (!this.complete) {
      await this.mailer.send(`Sleeping for ${days} days`);
      await ctx.sleep(days * 86_400_000);
    }
    return 'done!';
  }

  @SignalHandler('complete')
  onComplete(): void {
    this.complete = true;
  }
}

/**
 * timer-examples' reminder: if processing the order outlasts `remindAfterMs`, mail a reminder,
 * then wait for processing to finish. The slow processing is a child workflow's durable sleep
 * (a step body cannot hold workflow time still while the clock moves).
 */
@Workflow('process-order')
class ProcessOrder {
  async run(ctx: WorkflowContext, ms: number): Promise<void> {
    if (ms > 0) await ctx.sleep(ms);
  }
}

@Workflow('order-with-reminder')
class OrderWithReminder {
  constructor(private readonly mailer: Mailer) {}

  async run(ctx: WorkflowContext, o: { processingMs: number; remindAfterMs: number }): Promise<void> {
    let processing = true;
    const child = await ctx.startChild('process-order', o.processingMs);
    const done = child.result().then(() => void (processing = false));
    await Promise.race([done, ctx.sleep(o.remindAfterMs)]);
    if (processing) {
      await this.mailer.send('your order is taking longer than expected');
      await done;
    }
  }
}

@Module({ providers: [Mailer, SleepForDays, ProcessOrder, OrderWithReminder] })
class SamplesModule {}

const DAY = 86_400_000;

describe("Temporal's samples on the Weft testing kit", () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;
  let sent: string[];

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(), SamplesModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
    sent = [];
    env.mockStep(Mailer, 'send', async (text: string) => void sent.push(text));
  });
  afterEach(async () => app?.close());

  it('sleep-for-days runs until the signal: one mail per 30 days, over 90 days of workflow time', async () => {
    const start = env.clock.now().getTime();
    const h = await env.start('sleep-for-days', 30); // the first mail goes at once (Temporal's test starts its worker later)
    await env.clock.advance('5m');
    expect(sent).toHaveLength(1);
    await env.clock.advance('90d');
    expect(sent).toHaveLength(4);
    await env.signal(h.workflowId, 'complete');
    expect(sent).toHaveLength(4);
    await env.clock.advance('30d'); // the sleep under way ends; the loop sees the signal
    expect(await env.result(h.workflowId)).toBe('done!');
    expect(sent).toHaveLength(4);
    expect(env.clock.now().getTime() - start).toBeGreaterThan(90 * DAY);
  });

  it('timer-examples: sends the reminder when processing outlasts its day', async () => {
    const h = await env.start('order-with-reminder', { processingMs: 3 * DAY, remindAfterMs: DAY });
    await env.clock.advance('1d');
    expect(sent).toEqual(['your order is taking longer than expected']);
    expect(await h.status()).toBe('running');
    await env.clock.advance('2d');
    await env.result(h.workflowId);
    expect(sent).toHaveLength(1);
  });

  it('timer-examples: sends no reminder when processing completes in time', async () => {
    const h = await env.start('order-with-reminder', { processingMs: 0, remindAfterMs: DAY });
    await env.clock.advance('2d');
    await env.result(h.workflowId);
    expect(sent).toEqual([]);
  });
});
