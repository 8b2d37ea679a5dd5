import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import type { WeftEngineOptions } from './options.js';

/** Commits without pause: every step's record is the next commit, sent as soon as the last one lands. */
class Busy {
  async run(ctx: WorkflowContext) {
    for (let i = 0; ; i++) await ctx.step('tick', () => i);
  }
}

const BUSY = 6;

const MODES: Array<[string, WeftEngineOptions, boolean]> = [
  ['none', { ownership: 'none' }, true],
  ['lease', { ownership: 'lease', leaseTtl: 3000, leaseRenewInterval: 1000 }, false],
  ['workflow-lease', { ownership: 'workflow-lease', workflowClaimTtl: 3000, workflowClaimRenewInterval: 1000 }, true],
];

describe.each(MODES)('cancel and suspend of workflows that keep committing (%s)', (_mode, options, otherEngines) => {
  const env = useTestEngines();

  const steps = async (id: string) =>
    Number((await env.tdb.query<{ n: string }>(`SELECT count(*) AS n FROM weft.weft_operations WHERE workflow_id = $1`, [id]))[0].n);
  const status = async (id: string) =>
    (await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = $1`, [id]))[0].status;

  /** `callers`: the engine that runs the workflows, then (unless 'lease') one that runs nothing. */
  const setup = async () => {
    const owner = await env.pool.create(options, (e) => e.register('busy', Busy));
    await owner.bootstrap();
    const callers: Array<[string, WeftEngine]> = [['the owner', owner]];
    if (otherEngines) {
      const other = await env.pool.create(options); // no types: it never runs them
      await other.bootstrap();
      callers.push(['another engine', other]);
    }
    return { owner, callers };
  };

  it.each([
    ['cancel', 'cancelled'],
    ['suspend', 'suspended'],
  ] as const)('%s wins against the run, called from the owner and from another engine', async (op, ended) => {
    const { owner, callers } = await setup();
    for (const [who, caller] of callers) {
      const ids: string[] = [];
      for (let i = 0; i < BUSY; i++) ids.push((await owner.start('busy', null)).workflowId);
      // Each run is well into its loop before the transition is sent.
      for (const id of ids) await waitFor(async () => (await steps(id)) >= 20, `${id} busy`);
      const outcomes = await Promise.allSettled(ids.map((id) => caller[op](id)));
      expect({ who, outcomes: outcomes.map((o) => o.status) }).toEqual({ who, outcomes: ids.map(() => 'fulfilled') });
      // A cancel asks the run, which ends at its next await (docs/cancellation.md); a suspend ends it now.
      if (op === 'cancel') {
        await waitFor(async () => (await Promise.all(ids.map(status))).every((s) => s === ended), `the runs end cancelled (${who})`);
      }
      // Nothing the run commits can land after its end: the count read now is final.
      const after = await Promise.all(ids.map(steps));
      await waitFor(() => owner.healthSnapshot().liveWorkflows === 0, `the owner stops its runs (${who})`);
      expect(await Promise.all(ids.map(status))).toEqual(ids.map(() => ended));
      expect(await Promise.all(ids.map(steps))).toEqual(after);
    }
  });
});
