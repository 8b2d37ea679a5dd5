// engine.queuePartitions (docs/queues.md, "Watching partitions"): a queue's keys with work,
// counted from weft_workflows, busiest first, bounded.
import { useTestEngines, codeOf } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Runs until signalled: an admitted one stays `running`. */
class Held {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
  }
}

describe('engine.queuePartitions (real PostgreSQL)', () => {
  const env = useTestEngines();
  const start = async (e: WeftEngine, key: string, n: number) => {
    for (let i = 0; i < n; i++) await e.start('held', {}, { workflowId: `${key}-${i}`, queue: 'p', partitionKey: key });
  };

  it("counts each key's enqueued and running, busiest first, with every key with work counted; bounds the list", async () => {
    const e = await env.pool.create(
      { backgroundTasks: 'manual', queues: { p: { concurrency: 10, partition: { concurrency: 2 } }, plain: {} } },
      (x) => x.register('held', Held),
    );
    await e.bootstrap();
    expect(await e.queuePartitions('p')).toEqual({ queue: 'p', partitioned: true, keysWithWork: 0, partitions: [] });
    await start(e, 'a', 5);
    await start(e, 'b', 1);
    await start(e, 'c', 3);
    expect((await e.runMaintenance()).admitted).toBe(5); // two of a, one of b, two of c
    await start(e, 'd', 2);

    const view = await e.queuePartitions('p');
    expect(view.keysWithWork).toBe(4);
    expect(view.partitions.map((p) => [p.partitionKey, p.enqueued, p.running])).toEqual([
      ['a', 3, 2],
      ['d', 2, 0],
      ['c', 1, 2],
      ['b', 0, 1],
    ]);
    // The oldest enqueued is the first of a that was not admitted (FIFO), by its stored creation time.
    const [oldestA] = await env.tdb.query<{ created_at: Date }>(
      `SELECT created_at FROM weft.weft_workflows WHERE partition_key = 'a' AND status = 'enqueued' ORDER BY created_at, id LIMIT 1`,
    );
    const a = view.partitions[0];
    expect(a.oldestEnqueuedAt?.getTime()).toBe(oldestA.created_at.getTime());
    expect(a.oldestEnqueuedAgeMs).toBeGreaterThanOrEqual(0);
    expect(view.partitions[3]).toMatchObject({ oldestEnqueuedAt: null, oldestEnqueuedAgeMs: null });

    // Bounded: the busiest `limit`, and still every key counted.
    const two = await e.queuePartitions('p', { limit: 2 });
    expect([two.keysWithWork, two.partitions.map((p) => p.partitionKey)]).toEqual([4, ['a', 'd']]);
    for (const limit of [0, 101, 1.5, '5']) {
      const err = await codeOf(e.queuePartitions('p', { limit: limit as number }));
      expect([limit, err?.code]).toEqual([limit, 'WEFT_INVALID_ARGUMENT']);
      expect(err?.message).toContain('from 1 to 100');
    }

    // A key whose work ended leaves the list.
    for (const id of ['b-0']) await e.signal(id, 'go', null);
    await e.result('b-0', { timeout: 10_000 });
    expect((await e.queuePartitions('p')).partitions.map((p) => p.partitionKey)).toEqual(['a', 'd', 'c']);
  });

  it('refuses an unknown queue with QueueNotDeclaredError; a queue without partition answers an empty list', async () => {
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { plain: { concurrency: 2 } } }, (x) => x.register('held', Held));
    await e.bootstrap();
    await e.start('held', {}, { workflowId: 'plain-1', queue: 'plain' });
    const err = await codeOf(e.queuePartitions('nope'));
    expect(err?.code).toBe('WEFT_QUEUE_NOT_DECLARED');
    expect(err?.message).toContain('declared: plain');
    expect((await codeOf(e.queuePartitions('x'.repeat(256))))?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await codeOf(e.queuePartitions(7 as never)))?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect(await e.queuePartitions('plain')).toEqual({ queue: 'plain', partitioned: false, keysWithWork: 0, partitions: [] });
  });
});
