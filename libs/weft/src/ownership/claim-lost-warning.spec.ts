import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

/** Commits without pause: a transition from elsewhere meets a commit in flight (the fence path). */
class Busy {
  async run(ctx: WorkflowContext) {
    for (let i = 0; ; i++) await ctx.step('tick', () => i);
  }
}

/** Parked on a signal: a transition from elsewhere is found by the owner's renewal. */
class Parked {
  async run(ctx: WorkflowContext) {
    await ctx.step('first', () => 1);
    return ctx.waitForSignal('go');
  }
}

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };

describe('WeftWorkflowClaimLostWarning: a lost claim, not a transition (real PostgreSQL)', () => {
  const env = useTestEngines();
  const warnings: Array<Error & { workflowId?: string; reason?: string }> = [];
  const claimLost = (id: string) => warnings.filter((w) => w.name === 'WeftWorkflowClaimLostWarning' && w.workflowId === id);
  const steps = async (id: string) =>
    Number((await env.tdb.query<{ n: string }>(`SELECT count(*) AS n FROM weft.weft_operations WHERE workflow_id = $1`, [id]))[0].n);

  const engines = async () => {
    const owner = await env.pool.create({ ...WL, onWarning: (w) => warnings.push(w) }, (e) =>
      e.register('busy', Busy).register('parked', Parked),
    );
    const other = await env.pool.create(WL); // runs nothing: only sends the transitions
    await owner.bootstrap();
    await other.bootstrap();
    return { owner, other };
  };

  it('cancel, suspend and timeout from another engine take the claim without a claim-lost warning; a takeover warns', async () => {
    const { owner, other } = await engines();
    const busy = [(await owner.start('busy', null)).workflowId, (await owner.start('busy', null)).workflowId];
    const parked = [(await owner.start('parked', null)).workflowId, (await owner.start('parked', null)).workflowId];
    const timedOut = (await owner.start('parked', null, { executionTimeout: 300 })).workflowId;
    for (const id of busy) await waitFor(async () => (await steps(id)) >= 10, 'busy');
    for (const id of parked) await waitFor(async () => (await steps(id)) >= 1, 'parked');
    // The deadline fires on the owner's timer pass or the other's: either way a rotation.
    await waitFor(async () => (await owner.describe(timedOut)).status === 'timed_out', 'timed out');
    await other.cancel(busy[0]);
    await other.suspend(busy[1]);
    await other.cancel(parked[0]);
    await other.suspend(parked[1]);
    // The owner has let all five go (its commits refused, or its renewal found them rotated).
    await waitFor(() => owner.healthSnapshot().claimsHeld === 0 && owner.healthSnapshot().liveWorkflows === 0, 'owner lets go');

    // Control: a claim really taken by another engine (a takeover, as the reclaim scan writes it).
    const taken = (await owner.start('parked', null)).workflowId;
    await waitFor(async () => (await steps(taken)) >= 1, 'parked');
    await env.tdb.query(
      `WITH c AS (UPDATE weft.weft_workflow_claims SET epoch = epoch + 1, engine_id = 'X', expires_at = now() + interval '1 hour'
                  WHERE workflow_id = $1 RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [taken],
    );
    await waitFor(() => claimLost(taken).length > 0, 'the takeover is warned about');
    expect(claimLost(taken).map((w) => w.reason)).toEqual(['renewal']);
    // Its warning came after every transition's had had the chance to be emitted.
    expect([...busy, ...parked, timedOut].flatMap((id) => claimLost(id))).toEqual([]);
  });
});
