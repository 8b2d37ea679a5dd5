import { useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';

// A burst of starts into a queue with room: the first batch is written, its admission runs, and
// only then the rest of the burst (docs/decisions/0060).

let release: () => void = () => undefined;
let gate = Promise.resolve();
const closeGate = (): void => {
  gate = new Promise<void>((r) => (release = r));
};
/** Most runs of `Gated` inside their step at once. */
let inside = 0;
let most = 0;

class Gated {
  async run(ctx: WorkflowContext) {
    await ctx.step('hold', async () => {
      most = Math.max(most, ++inside);
      await gate;
      inside--;
    });
    return 'ok';
  }
}

describe('a burst of starts into a queue (real PostgreSQL)', () => {
  const env = useTestEngines();
  const N = 300;

  beforeEach(() => {
    closeGate();
    inside = 0;
    most = 0;
  });
  afterEach(() => release());

  /** Per status, and the rows written after the queue's first admission (created_at is the insert's transaction start). */
  const figures = async (queue: string) =>
    (
      await env.tdb.query<{ running: number; enqueued: number; completed: number; later: number; first: number }>(
        `WITH f AS (SELECT min(admitted_at) AS t FROM weft.weft_workflows WHERE queue = $1),
              l AS (SELECT min(created_at) AS t FROM weft.weft_workflows WHERE queue = $1 AND created_at > (SELECT t FROM f))
         SELECT count(*) FILTER (WHERE status = 'running')::int AS running,
                count(*) FILTER (WHERE status = 'enqueued')::int AS enqueued,
                count(*) FILTER (WHERE status = 'completed')::int AS completed,
                count(*) FILTER (WHERE created_at > (SELECT t FROM f))::int AS later,
                count(*) FILTER (WHERE admitted_at < (SELECT t FROM l))::int AS first
         FROM weft.weft_workflows WHERE queue = $1`,
        [queue],
      )
    )[0];

  it('admits the first runs before the rest of the burst is written, then writes it: no start lost, the limit kept', async () => {
    const e = await env.pool.create({ queues: { q: { concurrency: 5 } } }, (x) => x.register('gated', Gated));
    await e.bootstrap();
    const handles = await Promise.all(Array.from({ length: N }, (_, i) => e.start('gated', { i }, { queue: 'q' })));
    await waitFor(() => most === 5, 'the first five runs inside their step');
    const f = await figures('q');
    expect(f.running + f.enqueued).toBe(N); // every start written
    expect(f.running).toBe(5);
    // The first batch (at most 256 rows) went alone; the rest was written after the admission,
    // which filled the queue's room from the first batch.
    expect(f.later).toBeGreaterThanOrEqual(N - 256);
    expect(f.first).toBe(5);
    release();
    expect(await Promise.all(handles.map((h) => h.result({ timeout: '60s' })))).toEqual(Array(N).fill('ok'));
    expect(most).toBe(5);
    expect((await figures('q')).completed).toBe(N);
  });

  it('a partitioned queue: the first admission takes one run per key first, and no key passes its limit', async () => {
    const e = await env.pool.create({ queues: { p: { concurrency: 10, partition: { concurrency: 2 } } } }, (x) =>
      x.register('gated', Gated),
    );
    await e.bootstrap();
    const handles = await Promise.all(
      Array.from({ length: N }, (_, i) => e.start('gated', { i }, { queue: 'p', partitionKey: `k${String(i % 20).padStart(2, '0')}` })),
    );
    await waitFor(() => most === 10, 'the first ten runs inside their step');
    const f = await figures('p');
    expect(f.running + f.enqueued).toBe(N);
    expect(f.later).toBeGreaterThanOrEqual(N - 256);
    expect(f.first).toBe(10);
    const perKey = await env.tdb.query<{ k: string; n: number }>(
      `SELECT partition_key AS k, count(*)::int AS n FROM weft.weft_workflows WHERE queue = 'p' AND status = 'running' GROUP BY 1`,
    );
    expect(perKey.length).toBe(10); // round-robin: ten keys, one each, before any key's second
    expect(Math.max(...perKey.map((r) => r.n))).toBe(1);
    release();
    await Promise.all(handles.map((h) => h.result({ timeout: '60s' })));
    expect((await figures('p')).completed).toBe(N);
  });

  it("holds nothing where this engine does not admit (backgroundTasks 'manual'): every start is written at once", async () => {
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { m: { concurrency: 5 } } }, (x) => x.register('gated', Gated));
    await e.bootstrap();
    await Promise.all(Array.from({ length: N }, (_, i) => e.start('gated', { i }, { queue: 'm' })));
    const f = await figures('m');
    expect([f.enqueued, f.running]).toEqual([N, 0]);
  });
});
