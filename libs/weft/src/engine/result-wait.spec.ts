import { codeOf, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

// result() on the handles of a backlog: every waiter read its status on its own timer, each with
// a promise and closures of its own between reads (3.1 KB a handle, 300 handles: 300 timers). The
// waits now share one timer (docs/decisions/0065); the reads are still batched and each caller
// still gets its own result, timeout or end.

let release: () => void = () => undefined;
const held = new Promise<void>((r) => (release = r));

/** Holds the queue's one slot until the test releases it. */
class Holds {
  async run(ctx: WorkflowContext) {
    return ctx.step('hold', () => held.then(() => 'released'));
  }
}

class Echo {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('echo', () => input.n);
  }
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('result() on a backlog (real PostgreSQL)', () => {
  const env = useTestEngines();

  it("a backlog's awaited handles wait on one timer, read in shared statements, and each gets its own result", async () => {
    const e = await env.pool.create({ queues: { q: { concurrency: 1 } } }, (x) => x.register('holds', Holds).register('echo', Echo));
    await e.bootstrap();
    const workflows = e.store.workflows;
    const read = { calls: 0, ids: 0 };
    const statuses = workflows.statuses.bind(workflows);
    workflows.statuses = async (ids) => {
      read.calls++;
      read.ids += ids.length;
      return statuses(ids);
    };
    const holder = await e.start('holds', {}, { queue: 'q' });
    await waitFor(async () => (await e.describe(holder.workflowId)).status === 'running', 'the holder running');
    const handles = await Promise.all(Array.from({ length: 300 }, (_, n) => e.start('echo', { n }, { queue: 'q' })));
    const before = timers();
    const results = handles.map((h) => h.result({ timeout: '60s' }));
    // Every waiter has had its first read and the one after its first wait: all are waiting again.
    await waitFor(() => read.ids >= 600, 'two reads of every waiter');
    // Before: one timer per waiter (300). The process's other timers move with the machine's load
    // (each idle client of a pool holds one, and a slow machine opens more clients): a bound
    // well under one per waiter, not an exact count.
    expect(timers() - before).toBeLessThan(handles.length / 10);
    expect(read.calls).toBeLessThanOrEqual(6);
    release();
    expect(await Promise.all(results)).toEqual(handles.map((_, n) => n));
    await expect(holder.result()).resolves.toBe('released');
  });

  it('waiters with different timeouts each time out at their own, the others wait on', async () => {
    const e = await env.pool.create({ queues: { q2: { concurrency: 1 } } }, (x) => x.register('echo', Echo));
    await e.bootstrap();
    let releaseHere: () => void = () => undefined;
    const heldHere = new Promise<void>((r) => (releaseHere = r));
    class HoldsHere {
      async run(ctx: WorkflowContext) {
        return ctx.step('hold', () => heldHere.then(() => 'released'));
      }
    }
    e.register('holds-here', HoldsHere);
    await e.start('holds-here', {}, { queue: 'q2' });
    const h = await e.start('echo', { n: 7 }, { queue: 'q2' });
    const long = h.result({ timeout: '60s' });
    const short = await codeOf(h.result({ timeout: '300ms' }));
    expect(short?.code).toBe('WEFT_RESULT_TIMEOUT');
    const shorter = await codeOf(e.result(h.workflowId, { timeout: 50 }));
    expect(shorter?.code).toBe('WEFT_RESULT_TIMEOUT');
    releaseHere();
    await expect(long).resolves.toBe(7);
  });
});
