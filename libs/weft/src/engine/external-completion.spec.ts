import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import {
  InvalidArgumentError,
  NonRetryableError,
  StepAlreadyCompletedError,
  StepFailedError,
  WorkflowFailedError,
} from '../common/errors.js';
import type { StepArgs, WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// External completion (DESIGN 9.4, 9.8): a step with { complete: 'external' } gives its body a
// completionToken; engine.completeStep / failStep finish that attempt once, from any engine;
// failStep counts as a failed attempt; the step's timeout applies.

const tokens: Record<string, string[]> = {};
const bodies: Record<string, number> = {};

class Approval {
  async run(ctx: WorkflowContext, input: { maxAttempts?: number; timeout?: number }) {
    const decision = await ctx.step(
      'approve',
      ({ completionToken }: StepArgs) => {
        bodies[ctx.workflowId] = (bodies[ctx.workflowId] ?? 0) + 1;
        (tokens[ctx.workflowId] ??= []).push(completionToken!);
        return 'ignored: the completion gives the result';
      },
      { complete: 'external', retry: { maxAttempts: input.maxAttempts ?? 1, initialInterval: 10 }, timeout: input.timeout ?? '30s' },
    );
    return { decision };
  }
}

const register = (e: WeftEngine) => e.register('approval', Approval);
const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };
const tokenOf = (id: string, n = 1) => waitFor(() => tokens[id]?.[n - 1], `token ${n} of ${id}`);

async function stepFailure(engine: WeftEngine, id: string): Promise<StepFailedError> {
  const err = await engine.result(id, { timeout: '10s' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(WorkflowFailedError);
  return (err as WorkflowFailedError).cause as StepFailedError;
}

describe('external step completion (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('completeStep from another engine finishes the step once; a second completion is refused with a typed error', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    const other = await env.pool.create(WL); // runs nothing of it
    await a.start('approval', {}, { workflowId: 'ext-1' });
    const token = await tokenOf('ext-1');
    await other.completeStep(token, { approvedBy: 'ops' });
    await expect(a.result('ext-1', { timeout: '10s' })).resolves.toEqual({ decision: { approvedBy: 'ops' } });
    await expect(other.completeStep(token, 'again')).rejects.toBeInstanceOf(StepAlreadyCompletedError);
    await expect(a.failStep(token, new Error('late'))).rejects.toMatchObject({ code: 'WEFT_STEP_ALREADY_COMPLETED' });
  });

  it('completed on the engine that runs it: at once, without waiting for a poll', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('approval', {}, { workflowId: 'ext-local' });
    await a.completeStep(await tokenOf('ext-local'), 'yes');
    await expect(a.result('ext-local', { timeout: '10s' })).resolves.toEqual({ decision: 'yes' });
  });

  it('failStep is a failed attempt: retried with a new token; the old token is spent', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('approval', { maxAttempts: 2 }, { workflowId: 'ext-retry' });
    const first = await tokenOf('ext-retry');
    await a.failStep(first, new Error('reviewer unavailable'));
    const second = await tokenOf('ext-retry', 2);
    expect(second).not.toBe(first);
    await expect(a.completeStep(first, 'stale')).rejects.toBeInstanceOf(StepAlreadyCompletedError);
    await a.completeStep(second, 'approved');
    await expect(a.result('ext-retry', { timeout: '10s' })).resolves.toEqual({ decision: 'approved' });
  });

  it('failStep with a NonRetryableError fails the step at once, the error its cause', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('approval', { maxAttempts: 5 }, { workflowId: 'ext-refused' });
    await a.failStep(await tokenOf('ext-refused'), new NonRetryableError('refused', { code: 'POLICY', details: { by: 'ops' } }));
    const step = await stepFailure(a, 'ext-refused');
    expect(step.attempts).toBe(1);
    expect(step.cause).toBeInstanceOf(NonRetryableError);
    expect(step.cause).toMatchObject({ code: 'POLICY', details: { by: 'ops' } });
  });

  it("the step's timeout applies to the wait", async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('approval', { timeout: 300 }, { workflowId: 'ext-timeout' });
    const step = await stepFailure(a, 'ext-timeout');
    expect(step.cause).toMatchObject({ name: 'StepTimeoutError' });
    await expect(a.completeStep(tokens['ext-timeout'][0], 'too late')).rejects.toBeInstanceOf(StepAlreadyCompletedError);
  });

  it('a completion made while no engine runs the step is taken by the next owner without running the body again', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A' }, register);
    await a.bootstrap();
    await a.start('approval', {}, { workflowId: 'ext-away' });
    const token = await tokenOf('ext-away');
    await a.dispose();
    const caller = await env.pool.create(WL);
    await caller.completeStep(token, 'while away');
    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await expect(b.result('ext-away', { timeout: '10s' })).resolves.toEqual({ decision: 'while away' });
    expect(bodies['ext-away']).toBe(1);
  });

  it('refuses a token that is not one, and a workflow that is not there', async () => {
    const a = await env.pool.create(WL, register);
    await expect(a.completeStep('not-a-token', 1)).rejects.toBeInstanceOf(InvalidArgumentError);
    const forged = Buffer.from(JSON.stringify(['nobody', 1, 0, 1])).toString('base64url');
    await expect(a.completeStep(forged, 1)).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
  });
});
