import { Client } from 'pg';
import type { Duration } from '../common/duration.js';
import type { WorkflowContext } from '../common/types.js';
import { WeftTestEnvironment } from './environment.js';
import { weftMatchers, type WeftMatchers } from './matchers.js';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Assertion<T> extends WeftMatchers<T> {}
}
expect.extend(weftMatchers);

class Sleeper {
  async run(ctx: WorkflowContext, days: number) {
    const before = ctx.now().getTime();
    await ctx.sleep(`${days}d` as Duration);
    return { sleptMs: ctx.now().getTime() - before };
  }
}

class Ticker {
  async run(ctx: WorkflowContext, input: { every: Duration; times: number }) {
    const at: number[] = [];
    for (let i = 0; i < input.times; i++) {
      await ctx.sleep(input.every);
      at.push(ctx.now().getTime());
    }
    return at;
  }
}

/** Records when it woke, as workflow time, in a step (so the order across workflows is visible). */
const woke: Array<{ name: string; at: number }> = [];
class Waker {
  async run(ctx: WorkflowContext, input: { name: string; after: Duration }) {
    await ctx.sleep(input.after);
    await ctx.step('woke', () => void woke.push({ name: input.name, at: Date.now() }));
  }
}

class SignalAfterSleep {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('30d');
    const approval = await ctx.waitForSignal<string>('approve', { timeout: '7d' });
    return approval ?? 'expired';
  }
}

class WithDeadline {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('2d');
  }
}

describe('WeftTestEnvironment', () => {
  let env: WeftTestEnvironment;

  beforeAll(async () => {
    env = await WeftTestEnvironment.create({
      workflows: [
        ['sleeper', Sleeper],
        ['ticker', Ticker],
        ['waker', Waker],
        ['signal-after-sleep', SignalAfterSleep],
        ['with-deadline', WithDeadline],
      ],
    });
  });
  afterAll(async () => env?.close());

  it('a 30-day sleep ends when the clock advances 30 days, and ctx.now() saw the 30 days', async () => {
    const realStart = Date.now();
    const h = await env.start('sleeper', 30);
    await env.clock.advance('29d');
    expect(await h.status()).toBe('running');
    await env.clock.advance('1d');
    expect(await h.status()).toBe('completed');
    const out = await env.result<{ sleptMs: number }>(h.workflowId);
    expect(out.sleptMs).toBeGreaterThanOrEqual(30 * 86_400_000);
    expect(out.sleptMs).toBeLessThan(30 * 86_400_000 + 60_000);
    expect(Date.now() - realStart).toBeLessThan(86_400_000); // not the 30 days (the wall time is in the report)
  });

  it('one advance fires every timer due within it, a loop of sleeps included', async () => {
    const h = await env.start('ticker', { every: '1d', times: 10 });
    const t0 = env.clock.now().getTime();
    await env.clock.advance('10d');
    const at = await env.result<number[]>(h.workflowId);
    expect(at).toHaveLength(10);
    // Each sleep ended a day after the one before: the clock stopped at each due time in turn.
    at.forEach((t, i) => expect(t - t0).toBeGreaterThanOrEqual((i + 1) * 86_400_000));
    at.forEach((t, i) => expect(t - t0).toBeLessThan((i + 1) * 86_400_000 + 5_000));
  });

  it('timers fire in due order across workflows, whatever order they were started in', async () => {
    woke.length = 0;
    const late = await env.start('waker', { name: 'late', after: '3h' });
    const early = await env.start('waker', { name: 'early', after: '1h' });
    const middle = await env.start('waker', { name: 'middle', after: '2h' });
    await env.clock.advance('1d');
    for (const h of [late, early, middle]) expect(await h.status()).toBe('completed');
    expect(woke.map((w) => w.name)).toEqual(['early', 'middle', 'late']);
  });

  it('a workflow that sleeps 30 days, then waits 7 days for a signal, runs end to end', async () => {
    const h = await env.start('signal-after-sleep', null);
    await env.clock.advance('30d');
    await env.signal(h.workflowId, 'approve', 'yes');
    expect(await env.result(h.workflowId)).toBe('yes');
    const history = await env.history(h.workflowId);
    expect(history).toHaveReceivedSignal('approve');

    const expiring = await env.start('signal-after-sleep', null);
    await env.clock.advance('37d');
    expect(await env.result(expiring.workflowId)).toBe('expired');
    expect(await env.history(expiring.workflowId)).not.toHaveReceivedSignal('approve');
  });

  it('executionTimeout and delayed starts follow the clock', async () => {
    const timed = await env.start('with-deadline', null, { executionTimeout: '1d' });
    const delayed = await env.start('sleeper', 1, { startAfter: '5d' });
    await env.clock.advance('1d');
    expect(await timed.status()).toBe('timed_out');
    expect(await delayed.status()).toBe('pending');
    await env.clock.advance('4d');
    expect(await delayed.status()).toBe('running');
    await env.clock.advance('1d');
    expect(await delayed.status()).toBe('completed');
  });

  it('a singleton start keeps its attributes, and its delay is on the workflow clock', async () => {
    // With the clock already moved on, a delay counted from the database's own clock would be due at once.
    await env.clock.advance('10d');
    const delayed = await env.start('sleeper', 1, { startAfter: '5d', singleton: 'nightly', attributes: { tenant: 'acme' } });
    expect((await env.describe(delayed.workflowId)).attributes).toEqual({ tenant: 'acme' });
    await env.clock.advance('4d');
    expect(await delayed.status()).toBe('pending');
    await env.clock.advance('1d');
    expect(await delayed.status()).toBe('running');
  });

  it('drops its schema on close; keepSchema keeps it', async () => {
    const dropped = await WeftTestEnvironment.create({ workflows: [['sleeper', Sleeper]] });
    const kept = await WeftTestEnvironment.create({ workflows: [['sleeper', Sleeper]], keepSchema: true });
    await dropped.close();
    await kept.close();
    const c = new Client({ connectionString: dropped.databaseUrl });
    await c.connect();
    try {
      const exists = async (s: string) => (await c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [s])).rowCount === 1;
      expect(await exists(dropped.schema)).toBe(false);
      expect(await exists(kept.schema)).toBe(true);
      await c.query(`DROP SCHEMA "${kept.schema}" CASCADE`);
    } finally {
      await c.end();
    }
  });
});
