import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import type { WeftEngineOptions } from './options.js';

const after: Record<string, number> = {};

/** Sleeps `rounds` times; the step after each sleep counts how often it ran. */
class Sleeper {
  async run(ctx: WorkflowContext, input: { ms: number; rounds?: number; key: string }) {
    for (let i = 0; i < (input.rounds ?? 1); i++) {
      await ctx.sleep(input.ms);
      await ctx.step(`after-${i}`, () => (after[`${input.key}:${i}`] = (after[`${input.key}:${i}`] ?? 0) + 1));
    }
    return 'woke';
  }
}

/** The poll is not what fires them: it looks once at start-up, then only a minute later. */
const SLOW_POLL = { timerPollInterval: '60s' } as const;
const MODES: Array<[string, WeftEngineOptions]> = [
  ['none', { ownership: 'none' }],
  ['workflow-lease', { ownership: 'workflow-lease', workflowClaimTtl: 3000, workflowClaimRenewInterval: 1000 }],
];
const localTimers = (e: WeftEngine) => (e as unknown as { runtime: { timers: { size: number } } }).runtime.timers.size;

describe.each(MODES)('timers of the runs an engine owns fire at their due time (%s)', (mode, ownership) => {
  const env = useTestEngines();

  const engine = async (extra: WeftEngineOptions = {}) => {
    const e = await env.pool.create({ ...ownership, ...SLOW_POLL, ...extra }, (x) => x.register('sleeper', Sleeper));
    await e.bootstrap();
    return e;
  };

  it('a later timer is not held back until the next poll by an earlier one', async () => {
    const e = await engine();
    const [a, b] = await Promise.all([e.start('sleeper', { ms: 200, key: `${mode}a` }), e.start('sleeper', { ms: 1500, key: `${mode}b` })]);
    // Before, the first one's nudge made the poll look at 200 ms, and the next look was a minute later.
    await expect(Promise.all([a.result({ timeout: '20s' }), b.result({ timeout: '20s' })])).resolves.toEqual(['woke', 'woke']);
    expect([after[`${mode}a:0`], after[`${mode}b:0`]]).toEqual([1, 1]); // each fired once
    expect((await e.describe(b.workflowId)).history.map((o) => o.kind)).toEqual(['sleep', 'step']);
  });

  it('re-armed by a run reloaded after its eviction, and again at each later wait', async () => {
    const e = await engine({ maxCachedWorkflows: 1 }); // every park evicts the other run
    const hs = await Promise.all(['c', 'd', 'f'].map((k) => e.start('sleeper', { ms: 300, rounds: 3, key: mode + k })));
    await expect(Promise.all(hs.map((h) => h.result({ timeout: '30s' })))).resolves.toEqual(['woke', 'woke', 'woke']);
    for (const k of ['c', 'd', 'f']) expect([0, 1, 2].map((i) => after[`${mode}${k}:${i}`])).toEqual([1, 1, 1]);
    expect(localTimers(e)).toBe(0);
  });

  it('arms nothing under backgroundTasks manual, and nothing stays armed after dispose', async () => {
    const manual = await engine({ backgroundTasks: 'manual' });
    const m = await manual.start('sleeper', { ms: 100, key: 'm' });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [m.workflowId])).length,
      'timer row',
    );
    expect(localTimers(manual)).toBe(0);
    await waitFor(async () => (await manual.runMaintenance()).timersFired > 0, 'the timer fired by runMaintenance once due');
    await expect(m.result({ timeout: '10s' })).resolves.toBe('woke');

    const auto = await engine();
    await auto.start('sleeper', { ms: 600_000, key: 'long' });
    await waitFor(() => localTimers(auto) === 1, 'armed');
    await auto.dispose();
    expect(localTimers(auto)).toBe(0);
  });
});
