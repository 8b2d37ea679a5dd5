import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

const bodies: Record<string, number> = {};
const bump = (k: string) => (bodies[k] = (bodies[k] ?? 0) + 1);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

class LongStep {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('long', async () => {
      bump(`${input.key}:long`);
      await delay(1000);
      return 1;
    });
    return ctx.step('after', () => 2);
  }
}

class StepThenChild {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('short', async () => {
      bump(`${input.key}:short`);
      await delay(300);
      return 1;
    });
    return ctx.executeChild<string>('kid', { key: input.key });
  }
}

class Kid {
  async run(ctx: WorkflowContext, input: { key: string }) {
    return ctx.step('kid', () => {
      bump(`${input.key}:kid`);
      return 'kid done';
    });
  }
}

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };

describe('graceful shutdown never changes an outcome (real PostgreSQL)', () => {
  const env = useTestEngines();
  const register = (e: import('./engine.js').WeftEngine) =>
    e.register('long', LongStep).register('then-child', StepThenChild).register('kid', Kid);
  const status = async (id: string) =>
    (await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = $1`, [id]))[0]?.status;
  const steps = async (id: string) =>
    (
      await env.tdb.query<{ name: string }>(`SELECT name FROM weft.weft_operations WHERE workflow_id = $1 AND kind = 'step' ORDER BY seq`, [
        id,
      ])
    ).map((r) => r.name);

  it('dispose lets running steps finish and commit, starts nothing new, and leaves the rest running for another engine', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A', shutdownGracePeriod: '3s' }, register);
    await a.bootstrap();
    await a.start('long', { key: 'g1' }, { workflowId: 'g1-long' });
    await a.start('then-child', { key: 'g1' }, { workflowId: 'g1-parent' });
    await waitFor(() => bodies['g1:long'] && bodies['g1:short'], 'both first bodies running');
    await delay(100);
    await a.dispose();

    // Neither failed: a shutdown is nobody's fault. Both finished bodies were committed.
    expect(await status('g1-long')).toBe('running');
    expect(await status('g1-parent')).toBe('running');
    expect(await steps('g1-long')).toEqual(['long']);
    expect(await steps('g1-parent')).toEqual(['short']);
    const held = await env.tdb.query(`SELECT 1 FROM weft.weft_workflow_claims WHERE engine_id IS NOT NULL`);
    expect(held).toHaveLength(0); // released at the end of the drain

    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await expect(b.result('g1-long', { timeout: '10s' })).resolves.toBe(2);
    await expect(b.result('g1-parent', { timeout: '10s' })).resolves.toBe('kid done');
    // A finished body is never run again because of a shutdown.
    expect(bodies).toMatchObject({ 'g1:long': 1, 'g1:short': 1, 'g1:kid': 1 });
  });

  it('a child start already under way when dispose begins does not fail the parent', async () => {
    const a = await env.pool.create({ shutdownGracePeriod: '2s' }, register);
    await a.bootstrap();
    await a.start('then-child', { key: 'g2' }, { workflowId: 'g2-parent' });
    // Dispose right as the short step ends: the parent reaches executeChild during the drain.
    await waitFor(() => bodies['g2:short'], 'the short step running');
    await delay(295);
    await a.dispose();
    expect(['running', 'completed']).toContain(await status('g2-parent'));

    const b = await env.pool.create({}, register);
    await b.bootstrap();
    await expect(b.result('g2-parent', { timeout: '10s' })).resolves.toBe('kid done');
    expect(bodies['g2:short']).toBe(1);
  });
});
