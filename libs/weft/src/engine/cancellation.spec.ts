import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { WorkflowCancelledError, WorkflowFailedError } from '../common/errors.js';
import type { StepArgs, WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

/** What each workflow saw, by workflow id. */
const seen: Record<string, unknown[]> = {};
const note = (id: string, what: unknown) => void (seen[id] ??= []).push(what);

/** Releases the cleanup steps that wait for it, by workflow id. */
const latches = new Map<string, () => void>();
const latch = (id: string) => new Promise<void>((r) => latches.set(id, r));

const untilAborted = (signal: AbortSignal) =>
  new Promise<string>((resolve) => {
    if (signal.aborted) return resolve('aborted');
    signal.addEventListener('abort', () => resolve('aborted'), { once: true });
  });

/** Waits at `input.at`; on cancel runs a cleanup (two steps around a sleep) and returns, or rethrows. */
class Cleans {
  async run(ctx: WorkflowContext, input: { at: 'sleep' | 'signal' | 'condition' | 'step'; rethrow?: boolean; block?: boolean }) {
    const id = ctx.workflowId;
    try {
      if (input.at === 'sleep') await ctx.sleep('1h');
      else if (input.at === 'signal') await ctx.waitForSignal('never');
      else if (input.at === 'condition') await ctx.condition(() => false);
      else
        await ctx.step('long', async ({ signal }: StepArgs) => {
          note(id, 'long began');
          note(id, `long ${await untilAborted(signal)}`);
          return 'long done';
        });
      return 'not cancelled';
    } catch (err) {
      note(id, err instanceof WorkflowCancelledError ? 'cancelled' : `other: ${(err as Error).name}`);
      // Every cancellable call after the cancel throws at once.
      await ctx.sleep('1s').catch((e: unknown) => note(id, e instanceof WorkflowCancelledError ? 'sleep refused' : 'sleep ran'));
      const out = await ctx.nonCancellable(async () => {
        await ctx.step('undo-1', () => note(id, 'undo-1'));
        await ctx.sleep(50);
        if (input.block) await ctx.step('blocks', () => latch(id));
        await ctx.step('undo-2', () => note(id, 'undo-2'));
        return 'cleaned';
      });
      if (input.rethrow) throw err;
      return out;
    }
  }
}

class Parent {
  async run(ctx: WorkflowContext) {
    const child = await ctx.startChild('child', null, { workflowId: `${ctx.workflowId}-child` });
    try {
      return await child.result();
    } catch (err) {
      note(ctx.workflowId, err instanceof WorkflowCancelledError ? 'cancelled' : 'other');
      throw err;
    }
  }
}

class Child {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('1h');
    return 'child done';
  }
}

class Slow {
  async run(ctx: WorkflowContext) {
    try {
      await ctx.sleep('1h');
    } catch {
      await ctx.nonCancellable(() => ctx.sleep('1h')); // longer than the grace period
    }
  }
}

const register = (e: WeftEngine) => e.register('cleans', Cleans).register('parent', Parent).register('child', Child).register('slow', Slow);
/** The run is parked at its wait on `e` (not before its first call, not in a step). */
const parked = (e: WeftEngine, id: string) =>
  waitFor(
    () => (e as unknown as { runtime: { liveRun(id: string): { parked: boolean } | undefined } }).runtime.liveRun(id)?.parked,
    `${id} parked`,
  );

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };

describe('cancellation (real PostgreSQL)', () => {
  const env = useTestEngines();
  const ops = (id: string) =>
    env.tdb.query<{ seq: number; kind: string; name: string }>(
      `SELECT seq, kind, name FROM weft.weft_operations WHERE workflow_id = $1 ORDER BY seq`,
      [id],
    );
  const status = async (id: string) =>
    (await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = $1`, [id]))[0]?.status;

  it.each(['sleep', 'signal', 'condition'] as const)(
    'throws WorkflowCancelledError at a %s; the cleanup in nonCancellable runs and the returned value completes it',
    async (at) => {
      const a = await env.pool.create(WL, register);
      await a.bootstrap();
      const id = `at-${at}`;
      await a.start('cleans', { at }, { workflowId: id });
      await parked(a, id);
      await a.cancel(id, { reason: 'user asked' });
      await expect(a.result(id, { timeout: '10s' })).resolves.toBe('cleaned');
      expect(seen[id]).toEqual(['cancelled', 'sleep refused', 'undo-1', 'undo-2']);
      const kinds = (await ops(id)).map((o) => `${o.kind}:${o.name}`);
      expect(kinds).toEqual(['cancelRequested:cancel', 'step:undo-1', 'sleep:sleep', 'step:undo-2']);
      // Nothing of the cancel is left: its grace timer went with the end.
      expect(await env.tdb.query(`SELECT kind FROM weft.weft_timers WHERE workflow_id = $1`, [id])).toEqual([]);
    },
  );

  it('a step body running at the cancel sees its signal abort; its result is not recorded; a rethrow ends it cancelled', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('cleans', { at: 'step', rethrow: true }, { workflowId: 'at-step' });
    await waitFor(() => seen['at-step']?.includes('long began'), 'the body running');
    await a.cancel('at-step'); // the default reason
    const err = await a.result('at-step', { timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(err).toMatchObject({ status: 'cancelled', cause: { code: 'WEFT_WORKFLOW_CANCELLED' } });
    // The body's abort and the code's catch happen in the same turn, in either order.
    expect([...seen['at-step']].sort()).toEqual(['cancelled', 'long aborted', 'long began', 'sleep refused', 'undo-1', 'undo-2']);
    const kinds = (await ops('at-step')).map((o) => `${o.kind}:${o.name}`);
    expect(kinds).toEqual(['cancelRequested:cancel', 'step:undo-1', 'sleep:sleep', 'step:undo-2']); // no 'long'
  });

  it('a second cancel adds nothing; a cancel of an ended workflow is WorkflowNotRunningError', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('cleans', { at: 'signal' }, { workflowId: 'twice' });
    await parked(a, 'twice');
    await a.cancel('twice', 'first');
    await a.cancel('twice', 'second');
    await expect(a.result('twice', { timeout: '10s' })).resolves.toBe('cleaned');
    expect((await ops('twice')).filter((o) => o.kind === 'cancelRequested')).toHaveLength(1);
    await expect(a.cancel('twice')).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_RUNNING' });
  });

  it('a cancel from another engine (one that runs no workflows) reaches the owner', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    const other = await env.pool.create(WL);
    await other.bootstrap();
    await a.start('cleans', { at: 'sleep' }, { workflowId: 'from-other' });
    await parked(a, 'from-other');
    await other.cancel('from-other', 'from elsewhere');
    await expect(a.result('from-other', { timeout: '10s' })).resolves.toBe('cleaned');
  });

  it('a workflow not running yet (a delayed start) is cancelled at once', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('cleans', { at: 'sleep' }, { workflowId: 'delayed', startAfter: '1h' });
    await a.cancel('delayed');
    expect(await status('delayed')).toBe('cancelled');
    expect(await ops('delayed')).toEqual([]);
  });

  it('past cancelGracePeriod the workflow ends cancelled, whatever its cleanup is doing', async () => {
    const a = await env.pool.create({ ...WL, cancelGracePeriod: 500 }, register);
    await a.bootstrap();
    await a.start('slow', null, { workflowId: 'slow-1' });
    await parked(a, 'slow-1');
    await a.cancel('slow-1');
    const err = await a.result('slow-1', { timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 'cancelled', cause: { code: 'WEFT_WORKFLOW_CANCELLED' } });
    expect((err as Error).message).toMatch(/cancelGracePeriod/);
    await waitFor(() => a.healthSnapshot().liveWorkflows === 0, 'the run stopped');
  });

  it("a cancelled parent's wait on its child rejects; the child, still running, is cancelled when the parent ends", async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('parent', null, { workflowId: 'p1' });
    await waitFor(async () => (await status('p1-child')) === 'running', 'the child running');
    await parked(a, 'p1');
    await a.cancel('p1');
    await expect(a.result('p1', { timeout: '10s' })).rejects.toMatchObject({ status: 'cancelled' });
    expect(seen.p1).toEqual(['cancelled']);
    await waitFor(async () => (await status('p1-child')) === 'cancelled', 'the child cancelled with its parent');
    const [child] = await env.tdb.query<{ error: { message: string } }>(`SELECT error FROM weft.weft_workflows WHERE id = 'p1-child'`);
    expect(child.error.message).toMatch(/Parent workflow "p1" ended/);
  });

  it('a takeover during the cleanup resumes it on another engine: each cleanup step recorded once, same end', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A' }, register);
    await a.bootstrap();
    await a.start('cleans', { at: 'step', block: true }, { workflowId: 'taken' });
    await waitFor(() => seen.taken?.includes('long began'), 'the body running');
    await a.cancel('taken', 'before the takeover');
    await waitFor(async () => (await ops('taken')).some((o) => o.name === 'undo-1'), 'undo-1 recorded');
    await waitFor(() => latches.has('taken'), 'the cleanup blocked');
    latches.delete('taken');
    await a.dispose(); // the blocked cleanup step is left unrecorded
    const before = [...seen.taken];

    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await waitFor(() => latches.has('taken'), 'the cleanup blocked again on B');
    latches.get('taken')!();
    await expect(b.result('taken', { timeout: '10s' })).resolves.toBe('cleaned');
    // B replayed the cancel at its seq: the long step did not run again, undo-1 not again.
    expect(seen.taken.slice(before.length)).toEqual(['cancelled', 'sleep refused', 'undo-2']);
    const kinds = (await ops('taken')).map((o) => `${o.kind}:${o.name}`);
    expect(kinds).toEqual(['cancelRequested:cancel', 'step:undo-1', 'sleep:sleep', 'step:blocks', 'step:undo-2']);
  });
});
