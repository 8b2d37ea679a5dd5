import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { ApplicationError, NonRetryableError, StepFailedError, WorkflowFailedError } from '../common/errors.js';
import type { StepArgs, WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import { resolveRetry } from './retry.js';

// Users' typed failures (DESIGN 9.4, 9.8): NonRetryableError stops a step's retries; an
// ApplicationError (and a subclass of it) keeps its class, name, code and details through the
// record, a replay and another engine; retry.maxElapsed bounds a step's attempts in time.

class PaymentDeclined extends ApplicationError {}

let calls: Record<string, number> = {};
const count = (key: string) => (calls[key] = (calls[key] ?? 0) + 1);

class Declines {
  async run(ctx: WorkflowContext, input: { kind: 'non-retryable' | 'marked' | 'plain' | 'subclass' }) {
    return ctx.step(
      'charge',
      () => {
        count(input.kind);
        if (input.kind === 'non-retryable') throw new NonRetryableError('card stolen', { code: 'STOLEN', details: { last4: '4242' } });
        if (input.kind === 'marked') throw new ApplicationError('no funds', { code: 'NSF', nonRetryable: true });
        if (input.kind === 'subclass')
          throw new PaymentDeclined('declined', { code: 'DECLINED', details: { tries: 1 }, nonRetryable: true });
        throw new ApplicationError('gateway busy', { code: 'BUSY' });
      },
      { retry: { maxAttempts: 3, initialInterval: 10 } },
    );
  }
}

/** Catches the step's failure, waits for "go" (after it, a replay's), and reports what it saw. */
class Inspects {
  async run(ctx: WorkflowContext) {
    let seen: Record<string, unknown> = {};
    try {
      await ctx.step(
        'charge',
        () => {
          throw new PaymentDeclined('declined', { code: 'DECLINED', details: { tries: 2 }, nonRetryable: true });
        },
        { retry: { maxAttempts: 5 } },
      );
    } catch (err) {
      const cause = (err as StepFailedError).cause;
      seen = { application: cause instanceof ApplicationError, name: cause.name, code: cause.code, details: cause.details };
    }
    await ctx.waitForSignal('go');
    if (seen.application) throw new ApplicationError('order refused', { code: 'REFUSED', details: seen });
    return seen;
  }
}

class Elapsed {
  async run(ctx: WorkflowContext, input: { hang: boolean }) {
    return ctx.step(
      'call',
      async ({ signal }: StepArgs) => {
        count(input.hang ? 'hang' : 'flaky');
        if (input.hang) {
          await new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error)));
        }
        throw new Error('still down');
      },
      { retry: { maxAttempts: 1000, initialInterval: 20, maxInterval: 20, maxElapsed: input.hang ? 200 : 2000 }, timeout: '10s' },
    );
  }
}

const register = (e: WeftEngine) => e.register('declines', Declines).register('inspects', Inspects).register('elapsed', Elapsed);

async function failureOf(engine: WeftEngine, id: string): Promise<WorkflowFailedError> {
  const err = await engine.result(id, { timeout: '10s' }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return err as WorkflowFailedError;
}

describe('typed user failures and retry.maxElapsed', () => {
  const env = useTestEngines();
  beforeEach(() => (calls = {}));

  it('NonRetryableError fails its step at the first attempt and comes back as one, with code and details, on another engine too', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('declines', { kind: 'non-retryable' }, { workflowId: 'nr-1' });
    for (const engine of [a, await env.pool.create({})]) {
      const step = (await failureOf(engine, 'nr-1')).cause as StepFailedError;
      expect(step).toBeInstanceOf(StepFailedError);
      expect(step.attempts).toBe(1);
      expect(step.cause).toBeInstanceOf(NonRetryableError);
      expect(step.cause).toBeInstanceOf(ApplicationError);
      expect(step.cause).toMatchObject({ name: 'NonRetryableError', message: 'card stolen', code: 'STOLEN', details: { last4: '4242' } });
    }
    expect(calls['non-retryable']).toBe(1);
  });

  it('an ApplicationError marked nonRetryable stops at once; a plain one is retried per the policy', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('declines', { kind: 'marked' }, { workflowId: 'marked-1' });
    await a.start('declines', { kind: 'plain' }, { workflowId: 'plain-1' });
    const marked = (await failureOf(a, 'marked-1')).cause as StepFailedError;
    expect(marked.cause).toBeInstanceOf(ApplicationError);
    expect(marked.cause).not.toBeInstanceOf(NonRetryableError);
    expect(marked.cause).toMatchObject({ code: 'NSF', nonRetryable: true });
    const plain = (await failureOf(a, 'plain-1')).cause as StepFailedError;
    expect(plain.attempts).toBe(3);
    expect(plain.cause).toMatchObject({ name: 'ApplicationError', code: 'BUSY', nonRetryable: false });
    expect(calls).toMatchObject({ marked: 1, plain: 3 });
  });

  it("a subclass keeps its name, and is an ApplicationError, in the workflow's code after a replay on another engine and at result()", async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('inspects', {}, { workflowId: 'inspects-1' });
    await waitFor(async () => (await a.describe('inspects-1')).history.some((op) => op.status === 'failed'), 'the failure recorded');
    await a.dispose();

    const b = await env.pool.create({}, register);
    await b.bootstrap();
    await b.signal('inspects-1', 'go');
    const failed = await failureOf(b, 'inspects-1');
    // The workflow's own ApplicationError, built from what the replayed step failure showed it.
    expect(failed.cause).toBeInstanceOf(ApplicationError);
    expect(failed.cause).toMatchObject({
      name: 'ApplicationError',
      code: 'REFUSED',
      details: { application: true, name: 'PaymentDeclined', code: 'DECLINED', details: { tries: 2 } },
    });
  });

  it('retry.maxElapsed stops the retries in time, with the last error as the cause', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('elapsed', { hang: false }, { workflowId: 'elapsed-1' });
    const step = (await failureOf(a, 'elapsed-1')).cause as StepFailedError;
    expect(step.cause).toMatchObject({ name: 'StepMaxElapsedError', code: 'WEFT_STEP_MAX_ELAPSED', maxElapsedMs: 2000 });
    expect((step.cause.cause as Error).message).toBe('still down');
    // Stopped by maxElapsed, not by maxAttempts (1000). 2 s, not less: on a loaded machine the
    // first attempt alone may take a few hundred ms, and then no attempt's error is the cause.
    expect(step.attempts).toBeGreaterThanOrEqual(1);
    expect(step.attempts).toBeLessThan(1000);
  });

  it('retry.maxElapsed aborts the attempt running at the deadline', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('elapsed', { hang: true }, { workflowId: 'elapsed-2' });
    const step = (await failureOf(a, 'elapsed-2')).cause as StepFailedError;
    expect(step.attempts).toBe(1);
    expect(step.cause).toMatchObject({ name: 'StepMaxElapsedError', maxElapsedMs: 200 });
    expect(calls.hang).toBe(1);
  });

  it('refuses a maxElapsed that is not a positive duration', () => {
    expect(() => resolveRetry({ maxElapsed: 0 })).toThrow(/retry.maxElapsed/);
    expect(() => resolveRetry({ maxElapsed: 'soon' as never })).toThrow(/retry.maxElapsed/);
    expect(resolveRetry({ maxElapsed: '2m' }).maxElapsedMs).toBe(120_000);
  });
});
