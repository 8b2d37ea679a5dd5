import { useTestEngines } from '../../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

// A parent and its child in the same concurrency-1 queue: the child runs on its parent's slot
// (docs/decisions/0017). Queued behind its waiting parent it was never admitted: both waited forever.

class Parent {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const child = await ctx.executeChild<number>('solo-child', { n: input.n });
    return child + 1;
  }
}

class Child {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('double', () => input.n * 2);
  }
}

const defs: WorkflowDefinition[] = [
  { name: 'solo-parent', factory: () => new Parent() as never, queue: 'solo' },
  { name: 'solo-child', factory: () => new Child() as never, queue: 'solo' },
];

describe('a child in its parent’s queue (real PostgreSQL, concurrency 1)', () => {
  const env = useTestEngines();

  it('runs on the parent’s slot: the parent completes, and the queue still admits one at a time', async () => {
    const register = (e: WeftEngine) => defs.forEach((d) => e.register(d));
    const engine = await env.pool.create({ queues: { solo: { concurrency: 1 } } }, register);
    await engine.bootstrap();
    await engine.start('solo-parent', { n: 20 }, { workflowId: 'p-1' });
    await engine.start('solo-parent', { n: 1 }, { workflowId: 'p-2' });
    expect(await engine.result('p-1', { timeout: '20s' })).toBe(41);
    expect(await engine.result('p-2', { timeout: '20s' })).toBe(3);

    const rows = await env.tdb.query<{ id: string; queue: string | null; admitted_at: Date | null; completed_at: Date }>(
      `SELECT id, queue, admitted_at, completed_at FROM weft.weft_workflows ORDER BY id`,
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    // The child is outside the queue's count; its parent holds the slot.
    expect(rows.find((r) => r.id.startsWith('p-1/'))?.queue).toBeNull();
    expect(byId.get('p-1')?.queue).toBe('solo');
    // One at a time: the second parent was admitted only after the first ended.
    expect(byId.get('p-2')!.admitted_at!.getTime()).toBeGreaterThanOrEqual(byId.get('p-1')!.completed_at.getTime());
  });
});
