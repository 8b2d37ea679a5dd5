import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { WorkflowFailedError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

const ran: Record<string, number> = {};
const bump = (k: string) => (ran[k] = (ran[k] ?? 0) + 1);
const gates = new Map<string, () => void>();

class Blocking {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('first', () => bump(`${input.key}:first`));
    await ctx.step('second', ({ signal }) => {
      bump(`${input.key}:second`);
      return new Promise<string>((resolve, reject) => {
        gates.set(input.key, () => resolve('released'));
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      });
    });
    return 'done';
  }
}

class VersionA {
  async run(ctx: WorkflowContext) {
    await ctx.step('a', () => 1);
    await ctx.sleep(60_000);
    return 'a';
  }
}
class VersionB {
  async run(ctx: WorkflowContext) {
    await ctx.step('b', () => 1);
    return 'b';
  }
}
class VersionFixed {
  async run(ctx: WorkflowContext) {
    await ctx.step('a', () => 1);
    return 'fixed';
  }
}

describe('WeftEngine lifecycle (real PostgreSQL)', () => {
  const env = useTestEngines();

  it('delays a start with startAfter, then runs it', async () => {
    const e = await env.pool.create({}, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    const h = await e.start('sleepy', { ms: 1 }, { startAfter: '300ms' });
    expect(await h.status()).toBe('pending');
    await expect(h.result({ timeout: '10s' })).resolves.toBe('woke');
  });

  it('ends a workflow past its executionTimeout as timed_out and aborts its signal', async () => {
    const e = await env.pool.create({}, (x) => x.register('blocking', Blocking));
    await e.bootstrap();
    const h = await e.start('blocking', { key: 'timeout' }, { executionTimeout: '300ms' });
    const err = await h.result({ timeout: '10s' }).catch((x: unknown) => x);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(await h.status()).toBe('timed_out');
  });

  it('cancels a sleeping workflow; result() rejects; cancel again is refused', async () => {
    const e = await env.pool.create({}, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    const h = await e.start('sleepy', { ms: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'sleep timer',
    );
    await h.cancel();
    await expect(h.result({ timeout: '5s' })).rejects.toMatchObject({ status: 'cancelled' });
    await expect(h.cancel()).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_RUNNING' });
    expect(await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).toHaveLength(0);
  });

  it('suspends and resumes; the recorded step does not run again', async () => {
    const e = await env.pool.create({}, (x) => x.register('blocking', Blocking));
    await e.bootstrap();
    const h = await e.start('blocking', { key: 'susp' });
    await waitFor(() => gates.has('susp'), 'second step running');
    await e.suspend(h.workflowId);
    expect(await h.status()).toBe('suspended');
    gates.delete('susp');
    await e.resume(h.workflowId);
    await waitFor(() => gates.has('susp'), 'second step running again');
    gates.get('susp')!();
    await expect(h.result({ timeout: '10s' })).resolves.toBe('done');
    expect(ran['susp:first']).toBe(1);
    expect(ran['susp:second']).toBe(2);
  });

  it('recovers running workflows on another engine: recorded steps never re-run, the in-flight one does', async () => {
    const a = await env.pool.create({}, (x) => x.register('blocking', Blocking));
    await a.bootstrap();
    const h = await a.start('blocking', { key: 'rec' });
    await waitFor(() => gates.has('rec'), 'second step in flight');
    gates.delete('rec');
    await a.dispose(); // shutdownGracePeriod 0: the in-flight step is abandoned
    const b = await env.pool.create({}, (x) => x.register('blocking', Blocking));
    await b.bootstrap();
    await waitFor(() => gates.has('rec'), 'second step re-run after recovery');
    gates.get('rec')!();
    await expect(b.result(h.workflowId, { timeout: '10s' })).resolves.toBe('done');
    expect(ran['rec:first']).toBe(1);
    expect(ran['rec:second']).toBe(2);
  });

  it('suspends on non-determinism with the reason, and resumes once the code is fixed', async () => {
    const a = await env.pool.create({}, (x) => x.register('versioned', VersionA));
    await a.bootstrap();
    const h = await a.start('versioned', {}, { workflowId: 'nondet-1' });
    await waitFor(async () => (await a.describe(h.workflowId)).history.length === 1, 'step a recorded');
    await a.dispose();
    const b = await env.pool.create({}, (x) => x.register('versioned', VersionB));
    await b.bootstrap();
    const d = await waitFor(async () => {
      const x = await b.describe('nondet-1');
      return x.status === 'suspended' ? x : null;
    }, 'suspension');
    if (!d) throw new Error('unreachable');
    expect(d.error).toMatchObject({ name: 'NonDeterminismError', code: 'WEFT_NON_DETERMINISM' });
    expect(d.error?.message).toContain('history has step "a"');
    expect(d.history).toHaveLength(1);
    await b.dispose();
    const c = await env.pool.create({}, (x) => x.register('versioned', VersionFixed));
    await c.bootstrap();
    await c.resume('nondet-1');
    await expect(c.result('nondet-1', { timeout: '10s' })).resolves.toBe('fixed');
  });

  it('evicts parked workflows beyond the cache bound and still wakes them from storage', async () => {
    const e = await env.pool.create({ maxCachedWorkflows: 2 }, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    const hs = await Promise.all(Array.from({ length: 8 }, () => e.start('sleepy', { ms: 300 })));
    const outs = await Promise.all(hs.map((h) => h.result({ timeout: '15s' })));
    expect(outs).toEqual(Array(8).fill('woke'));
  });

  it('applies the id policies', async () => {
    const e = await env.pool.create({}, (x) => x.register('sleepy', Sleepy));
    await e.bootstrap();
    const first = await e.start('sleepy', { ms: 1 }, { workflowId: 'policy-1' });
    await first.result({ timeout: '5s' });
    const again = await e.start('sleepy', { ms: 1 }, { workflowId: 'policy-1' });
    expect((await again.describe()).runNumber).toBe(1);
    await expect(e.start('sleepy', { ms: 1 }, { workflowId: 'policy-1', idPolicy: 'reject-duplicate' })).rejects.toMatchObject({
      code: 'WEFT_WORKFLOW_ALREADY_STARTED',
    });
    const renewed = await e.start('sleepy', { ms: 1 }, { workflowId: 'policy-1', idPolicy: 'start-new-if-terminal' });
    await renewed.result({ timeout: '5s' });
    const d = await renewed.describe();
    expect(d.runNumber).toBe(2);
    expect(d.history).toHaveLength(1);
  });
});
