import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// Two holes a takeover found (async-updates.spec.ts, "a takeover replays them in the same order",
// failed about one run in five): a timer taken by an engine that was shutting down was pushed a
// retry delay (30 s) ahead and woke nothing, so the next owner slept that much longer; and a timer
// fired into a run still replaying, before it reached the timer's wait, was dropped.

class LongReplay {
  async run(ctx: WorkflowContext, input: { steps: number }) {
    for (let i = 0; i < input.steps; i++) await ctx.step(`s${i}`, () => i);
    await ctx.sleep('1h');
    return 'woke';
  }
}

class ShortSleep {
  async run(ctx: WorkflowContext) {
    await ctx.sleep('100ms');
    return 'woke';
  }
}

interface Internals {
  runtime: {
    drive(id: string, seq?: number, fenceEpoch?: string | null): Promise<void>;
    liveRun(id: string): { isReplaying: boolean; waits: ReadonlyMap<number, unknown> } | undefined;
    close(): Promise<void>;
  };
  transitions: { fireOwn(id: string, seq: number): Promise<number | null> };
}
const internals = (e: WeftEngine) => e as unknown as Internals;

describe('timers across a takeover', () => {
  const env = useTestEngines();
  const timerRow = async (id: string) =>
    (
      await env.tdb.query<{ seq: number; ahead_ms: number }>(
        `SELECT seq, (EXTRACT(EPOCH FROM (fire_at - clock_timestamp())) * 1000)::float8 AS ahead_ms FROM weft.weft_timers WHERE workflow_id = $1 AND seq >= 0`,
        [id],
      )
    )[0];

  it('a timer taken while its engine shuts down goes back to its due time, not a retry delay later', async () => {
    const register = (e: WeftEngine) => e.register('short-sleep', ShortSleep);
    const a = await env.pool.create({ backgroundTasks: 'manual' }, register);
    await a.bootstrap();
    const { workflowId: id } = await a.start('short-sleep', {});
    await waitFor(async () => {
      const t = await timerRow(id);
      return t && t.ahead_ms <= 0;
    }, 'the sleep to be due');
    // The shutdown stopped its runs; a fire whose take was already on its way lands after that.
    await internals(a).runtime.close();
    await internals(a).transitions.fireOwn(id, 0);
    expect((await timerRow(id)).ahead_ms).toBeLessThanOrEqual(0);
  });

  it('a timer fired into a run still replaying, before it reaches the wait, resolves the wait when it does', async () => {
    const register = (e: WeftEngine) => e.register('long-replay', LongReplay);
    const a = await env.pool.create({ ownership: 'none' }, register);
    await a.bootstrap();
    const steps = 300;
    const { workflowId: id } = await a.start('long-replay', { steps });
    await waitFor(async () => (await timerRow(id))?.seq === steps, 'the sleep', 30_000);
    await a.dispose();
    // As a take leaves it: pushed ahead, so the loaded run does not fire it by itself.
    await env.tdb.query(`UPDATE weft.weft_timers SET fire_at = clock_timestamp() + interval '1 hour' WHERE workflow_id = $1`, [id]);

    const b = await env.pool.create({ ownership: 'none', backgroundTasks: 'manual' }, register);
    await internals(b).runtime.drive(id); // loaded and launched: its replay has just begun
    const run = internals(b).runtime.liveRun(id);
    expect(run?.isReplaying).toBe(true);
    expect(run?.waits.has(steps)).toBe(false);
    await internals(b).runtime.drive(id, steps, null); // the fire, before the replay reaches the sleep
    await expect(b.result(id, { timeout: '20s' })).resolves.toBe('woke');
  });
});
