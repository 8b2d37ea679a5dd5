import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { StepFailedError, WorkflowFailedError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// The error a step threw reaches the caller of result(): WorkflowFailedError.cause is the
// StepFailedError, whose cause is the step's own error with its name, message, code, details
// and cause, on the engine that ran it, on another engine and after a replay (docs/concepts.md "Errors").

class CardDeclinedError extends Error {
  readonly code = 'CARD_DECLINED';
  constructor(
    readonly details: unknown,
    cause?: unknown,
  ) {
    super('card declined', { cause });
    this.name = 'CardDeclinedError';
  }
}

class Charge {
  async run(ctx: WorkflowContext, input: { details: unknown }) {
    return ctx.step(
      'charge',
      () => {
        throw new CardDeclinedError(input.details ?? { last4: '4242', retryable: false }, new Error('gateway said 402'));
      },
      { retry: { maxAttempts: 1 } },
    );
  }
}

/** Fails its step, waits for "go", then rethrows what the step raised: after "go" it is a replay's error. */
class ChargeLater {
  async run(ctx: WorkflowContext) {
    let caught: unknown;
    try {
      await ctx.step(
        'charge',
        () => {
          throw new CardDeclinedError({ last4: '1111' });
        },
        { retry: { maxAttempts: 1 } },
      );
    } catch (err) {
      caught = err;
    }
    await ctx.waitForSignal('go');
    throw caught;
  }
}

const register = (e: WeftEngine) => e.register('charge', Charge).register('charge-later', ChargeLater);

async function failureOf(engine: WeftEngine, id: string): Promise<WorkflowFailedError> {
  const err = await engine.result(id, { timeout: '10s' }).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return err as WorkflowFailedError;
}

function expectStepCause(err: WorkflowFailedError, details: unknown, innerMessage?: string) {
  const step = err.cause;
  expect(step).toBeInstanceOf(StepFailedError);
  expect(step).toMatchObject({ code: 'WEFT_STEP_FAILED', stepName: 'charge', attempts: 1 });
  const original = (step as StepFailedError).cause;
  expect(original).toBeInstanceOf(Error);
  expect(original).toMatchObject({ name: 'CardDeclinedError', message: 'card declined', code: 'CARD_DECLINED', details });
  expect(original.stack).toContain('CardDeclinedError: card declined');
  if (innerMessage) expect((original.cause as Error).message).toBe(innerMessage);
}

describe("a failed step's own error, through result()", () => {
  const env = useTestEngines();

  it('is StepFailedError.cause with name, message, code, details and cause on the same engine and on another', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('charge', {}, { workflowId: 'charge-1' });
    expectStepCause(await failureOf(a, 'charge-1'), { last4: '4242', retryable: false }, 'gateway said 402');

    const b = await env.pool.create({});
    await b.bootstrap();
    expectStepCause(await failureOf(b, 'charge-1'), { last4: '4242', retryable: false }, 'gateway said 402');
  });

  it('is the same after the run is replayed on another engine', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    await a.start('charge-later', {}, { workflowId: 'charge-later-1' });
    await waitFor(
      async () => (await a.describe('charge-later-1')).history.some((op) => op.status === 'failed'),
      'the step failure to be recorded',
    );
    await a.dispose();

    const b = await env.pool.create({}, register);
    await b.bootstrap();
    await b.signal('charge-later-1', 'go');
    expectStepCause(await failureOf(b, 'charge-later-1'), { last4: '1111' });
  });

  it('leaves out details JSON cannot hold, and the workflow still fails with the rest', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    // The input is plain; the step builds details with a cycle (JSON cannot hold it).
    class Cyclic {
      async run(ctx: WorkflowContext) {
        return ctx.step(
          'charge',
          () => {
            throw new CardDeclinedError(cyclic);
          },
          { retry: { maxAttempts: 1 } },
        );
      }
    }
    a.register('cyclic', Cyclic);
    await a.start('cyclic', {}, { workflowId: 'cyclic-1' });
    const err = await failureOf(a, 'cyclic-1');
    const original = (err.cause as StepFailedError).cause;
    expect(original).toMatchObject({ name: 'CardDeclinedError', code: 'CARD_DECLINED' });
    expect(original.details).toBeUndefined();
  });
});
