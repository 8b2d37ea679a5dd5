// ctx.signalWorkflow, ctx.cancelWorkflow and ctx.startWorkflow (docs/events-and-streams.md), on a real PostgreSQL.
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

/** Waits for 'ping' signals and returns their payloads once it has `n`. */
class Target {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const got: unknown[] = [];
    while (got.length < input.n) got.push(await ctx.waitForSignal('ping'));
    return got;
  }
}

/** Signals `target`, then waits to be told to end: a restart in between replays the signal call. */
class Caller {
  async run(ctx: WorkflowContext, input: { target: string }) {
    await ctx.signalWorkflow(input.target, 'ping', { from: ctx.workflowId });
    const missing = await ctx.signalWorkflow('no-such-workflow', 'ping').then(
      () => 'sent',
      (err: Error & { cause?: { code?: string } }) => `${err.name}:${err.cause?.code}`,
    );
    await ctx.waitForSignal('end');
    return missing;
  }
}

/** Starts a detached workflow, cancels another, and ends before the detached one does. */
class Boss {
  async run(ctx: WorkflowContext, input: { victim: string }) {
    const started = await ctx.startWorkflow('target', { n: 1 });
    const named = await ctx.startWorkflow('target', { n: 1 }, { workflowId: 'named-detached' });
    await ctx.cancelWorkflow(input.victim);
    await ctx.cancelWorkflow(input.victim); // already cancelled: nothing more happens
    await ctx.waitForSignal('end');
    return [started.workflowId, named.workflowId];
  }
}

describe('ctx.signalWorkflow, cancelWorkflow and startWorkflow (real PostgreSQL)', () => {
  const env = useTestEngines();

  const engine = async () => {
    const e = await env.pool.create({}, (x: WeftEngine) => x.register('target', Target).register('caller', Caller).register('boss', Boss));
    await e.bootstrap();
    return e;
  };
  const signalsTo = async (id: string) =>
    (
      await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_messages WHERE workflow_id = $1 AND name = 'ping'`, [id])
    )[0].n;

  it('signalWorkflow: stored with the commit that records it, so delivered once across a restart of the caller', async () => {
    const a = await engine();
    const target = await a.start('target', { n: 2 }, { workflowId: 'target-1' });
    const caller = await a.start('caller', { target: target.workflowId }, { workflowId: 'caller-1' });
    await waitFor(async () => (await signalsTo(target.workflowId)) === 1, 'the signal stored');
    await waitFor(
      () => a.describe(caller.workflowId).then((d) => d.history.filter((o) => o.kind === 'signalWorkflow').length === 2),
      'both calls recorded',
    );
    await a.dispose();
    const b = await engine(); // replays the caller: the recorded calls do not send again
    await b.signal(caller.workflowId, 'end');
    expect(await b.result(caller.workflowId, { timeout: 10_000 })).toBe('StepFailedError:WEFT_WORKFLOW_NOT_FOUND');
    expect(await signalsTo(target.workflowId)).toBe(1);
    await b.signal(target.workflowId, 'ping', 'second');
    expect(await b.result(target.workflowId, { timeout: 10_000 })).toEqual([{ from: 'caller-1' }, 'second']);
  });

  it('startWorkflow starts a detached workflow that outlives its starter; cancelWorkflow cancels once', async () => {
    const a = await engine();
    const victim = await a.start('target', { n: 1 }, { workflowId: 'victim-1' });
    const boss = await a.start('boss', { victim: victim.workflowId }, { workflowId: 'boss-1' });
    await waitFor(async () => (await a.describe(victim.workflowId)).status === 'cancelled', 'the victim cancelled');
    await a.dispose();
    const b = await engine(); // replays the boss: no second start, no second cancel
    await b.signal(boss.workflowId, 'end');
    const [derived, named] = (await b.result(boss.workflowId, { timeout: 10_000 })) as string[];
    expect(named).toBe('named-detached');
    expect(derived).toBe('boss-1~0');
    for (const id of [derived, named]) {
      const d = await b.describe(id);
      expect([d.status, d.parentId, d.runNumber]).toEqual(['running', null, 1]); // not a child: it goes on
    }
    const victimRow = await b.describe(victim.workflowId);
    expect(victimRow.error?.message).toBe('Cancelled by workflow "boss-1"');
    const kinds = (await b.describe(boss.workflowId)).history.map((o) => o.kind);
    expect(kinds.filter((k) => k === 'startWorkflow' || k === 'cancelWorkflow')).toEqual([
      'startWorkflow',
      'startWorkflow',
      'cancelWorkflow',
      'cancelWorkflow',
    ]);
    await b.signal(derived, 'ping', 1);
    expect(await b.result(derived, { timeout: 10_000 })).toEqual([1]);
  });
});
