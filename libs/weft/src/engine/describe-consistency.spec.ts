import { useTestEngines } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { SqlClient } from '../storage/sql-client.js';
import { WorkflowStore } from '../storage/workflow-store.js';
import { describeWorkflow } from './inspect.js';

class Gated {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    await ctx.waitForSignal('go');
    await ctx.step('after', () => 2);
    return 'done';
  }
}

describe('describe() while the workflow commits', () => {
  const env = useTestEngines();

  it('never pairs an ended row with a history read before the final commit (seen as a flaky demo e2e under load)', async () => {
    const e = await env.pool.create({}, (x) => x.register('gated', Gated));
    await e.bootstrap();
    const h = await e.start('gated', {}, { workflowId: 'torn' });
    await e.describe('torn').then(async function wait(d): Promise<unknown> {
      return d.history.length >= 1 ? d : e.describe('torn').then(wait); // parked at waitForSignal
    });
    // The row read is held until the workflow has ended; whatever else describe reads is not.
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const real = e.database.sql;
    const slowRow = {
      manager: real.manager,
      pool: real.pool,
      transaction: real.transaction.bind(real),
      query: async (text: string, params?: unknown[]) => {
        if (/^SELECT id, type, status, input/.test(text.trim())) await released;
        return real.query(text, params);
      },
    } as unknown as SqlClient;
    const described = describeWorkflow(new WorkflowStore(slowRow, 'weft'), 'torn');
    await new Promise((r) => setTimeout(r, 100)); // let a parallel history read go out first, as it would
    await e.signal('torn', 'go');
    await h.result({ timeout: '10s' });
    release();
    const d = await described;
    expect(d.status).toBe('completed');
    expect(d.history.map((op) => op.name)).toEqual(['before', 'go', 'after']);
  });
});
