// Partitioned queues (docs/queues.md): limits per key under the queue's, keys admitted in turn.
import { useTestEngines, waitFor, codeOf } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Every run appends its id here when its step runs. */
const ran: string[] = [];
class Recorder {
  async run(ctx: WorkflowContext) {
    await ctx.step('record', () => void ran.push(ctx.workflowId));
  }
}

/** Bodies running now and the most seen at once, per key (the input's tenant): a ledger of real executions. */
const live = new Map<string, number>();
const most = new Map<string, number>();
class Tenanted {
  async run(ctx: WorkflowContext, input: { tenant: string; ms: number }) {
    await ctx.step('work', async () => {
      const n = (live.get(input.tenant) ?? 0) + 1;
      live.set(input.tenant, n);
      most.set(input.tenant, Math.max(most.get(input.tenant) ?? 0, n));
      await new Promise((r) => setTimeout(r, input.ms));
      live.set(input.tenant, live.get(input.tenant)! - 1);
    });
  }
}

describe('partitioned queues (real PostgreSQL)', () => {
  const env = useTestEngines();
  const rows = (prefix: string) =>
    env.tdb.query<{ id: string; status: string; partition_key: string | null; admitted_at: Date | null }>(
      `SELECT id, status, partition_key, admitted_at FROM weft.weft_workflows WHERE id LIKE $1 ORDER BY id`,
      [`${prefix}%`],
    );
  /** Starts `ids` into `queue` under `key`, many at once (group commit), in order of the chunks. */
  const startAll = async (e: WeftEngine, type: string, ids: string[], queue: string, key: string, input: unknown = {}) => {
    for (let i = 0; i < ids.length; i += 500)
      await Promise.all(ids.slice(i, i + 500).map((workflowId) => e.start(type, input, { workflowId, queue, partitionKey: key })));
  };

  it('refuses bad partition options and keys before anything is written; a type can take its key from the input', async () => {
    for (const [queues, option] of [
      [{ q: { concurrency: 2, partition: { concurrency: 3 } } }, 'queues.q.partition.concurrency'],
      [{ q: { partition: { concurrency: 0 } } }, 'queues.q.partition.concurrency'],
      [{ q: { partition: { rateLimit: { limit: 0, period: '1s' } } } }, 'queues.q.partition.rateLimit.limit'],
      [{ q: { partition: { concurency: 2 } } }, 'queues.q.partition.concurency'],
      [{ q: { partition: 2 } }, 'queues.q.partition'],
    ] as const) {
      const err = await codeOf(env.pool.create({ queues: queues as never }));
      expect(err?.code).toBe('WEFT_INVALID_CONFIGURATION');
      expect(err?.message).toContain(option);
    }
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { p: { partition: { concurrency: 1 } }, plain: {} } }, (x) =>
      x
        .register('rec', Recorder)
        .register({ name: 'keyed', factory: () => new Recorder(), queue: 'p', partitionKey: (i: { tenant: string }) => i.tenant }),
    );
    await e.bootstrap();
    for (const [opts, what] of [
      [{ queue: 'p' }, 'is partitioned'],
      [{ queue: 'plain', partitionKey: 'a' }, 'is not partitioned'],
      [{ partitionKey: 'a' }, 'needs a partitioned queue'],
      [{ queue: 'p', partitionKey: '' }, 'must not be empty'],
      [{ queue: 'p', partitionKey: 'x'.repeat(256) }, 'at most'],
      [{ queue: 'p', partitionKey: 'a\u0000b' }, 'must not contain'],
      [{ queue: 'p', partitionKey: 7 }, 'must be a string'],
    ] as const) {
      const err = await codeOf(e.start('rec', {}, opts as never));
      expect(err?.code).toBe('WEFT_INVALID_ARGUMENT');
      expect(err?.message).toContain(what);
    }
    expect((await codeOf(e.start('keyed', {})))?.code).toBe('WEFT_INVALID_ARGUMENT'); // the key function read no tenant
    expect(await rows('')).toEqual([]);
    await e.start('keyed', { tenant: 't-1' }, { workflowId: 'k-from-input' });
    await e.start('keyed', { tenant: 't-1' }, { workflowId: 'k-own', partitionKey: 't-2' });
    expect((await rows('k-')).map((r) => [r.id, r.status, r.partition_key])).toEqual([
      ['k-from-input', 'enqueued', 't-1'],
      ['k-own', 'enqueued', 't-2'],
    ]);
  });

  it('a key with 10,000 waiting cannot delay a key with 5 started after them: the 5 are admitted in the first pass', async () => {
    ran.length = 0;
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { fair: { concurrency: 10, partition: {} } } }, (x) =>
      x.register('rec', Recorder),
    );
    await e.bootstrap();
    const big = Array.from({ length: 10_000 }, (_, i) => `big-${String(i).padStart(5, '0')}`);
    await startAll(e, 'rec', big, 'fair', 'flood');
    await startAll(e, 'rec', ['small-1', 'small-2', 'small-3', 'small-4', 'small-5'], 'fair', 'small');
    expect((await e.runMaintenance()).admitted).toBe(10);
    const admitted = (await rows('')).filter((r) => r.admitted_at !== null);
    expect(admitted.filter((r) => r.partition_key === 'small')).toHaveLength(5);
    // FIFO within the key: the flooding key's five oldest.
    const oldest = await env.tdb.query<{ id: string }>(
      `SELECT id FROM weft.weft_workflows WHERE partition_key = 'flood' ORDER BY created_at, id LIMIT 5`,
    );
    expect(admitted.filter((r) => r.partition_key === 'flood').map((r) => r.id)).toEqual(oldest.map((r) => r.id).sort());
  }, 120_000);

  it('many small keys beside a flooding one are each served within a few passes, in turn', async () => {
    ran.length = 0;
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { turns: { concurrency: 4, partition: {} } } }, (x) =>
      x.register('rec', Recorder),
    );
    await e.bootstrap();
    await startAll(
      e,
      'rec',
      Array.from({ length: 200 }, (_, i) => `t-flood-${String(i).padStart(3, '0')}`),
      'turns',
      'a-flood',
    );
    for (let k = 0; k < 11; k++) await e.start('rec', {}, { workflowId: `t-key${k}`, queue: 'turns', partitionKey: `key${k}` });
    // 12 keys with work, 4 slots per pass: every key's first is admitted before any key's second.
    for (let pass = 1; pass <= 3; pass++) {
      expect((await e.runMaintenance()).admitted).toBe(4);
      await waitFor(() => ran.length === 4 * pass, `pass ${pass}'s runs`);
      await waitFor(async () => (await e.list({ status: 'running' })).items.length === 0, 'them to end');
    }
    expect(ran.filter((id) => id.startsWith('t-key'))).toHaveLength(11);
    expect(ran.filter((id) => id.startsWith('t-flood'))).toEqual(['t-flood-000']);
  });

  it('never runs more of one key than partition.concurrency, nor more of the queue than concurrency, over three engines', async () => {
    live.clear();
    most.clear();
    const opts = {
      ownership: 'workflow-lease' as const,
      workflowClaimTtl: 3000,
      workflowClaimRenewInterval: 500,
      queues: { pk: { concurrency: 7, partition: { concurrency: 2 } } },
    };
    const engines: WeftEngine[] = [];
    for (const id of ['A', 'B', 'C']) engines.push(await env.pool.create({ ...opts, engineId: id }, (x) => x.register('ten', Tenanted)));
    await Promise.all(engines.map((x) => x.bootstrap()));
    const tenants = ['t0', 't1', 't2', 't3', 't4'];
    const handles = await Promise.all(
      Array.from({ length: 60 }, (_, i) => {
        const tenant = i < 30 ? 't0' : tenants[i % 5]; // t0 floods
        return engines[i % 3].start('ten', { tenant, ms: 20 + (i % 4) * 15 }, { workflowId: `pk-${i}`, queue: 'pk', partitionKey: tenant });
      }),
    );
    // While they run, the database never shows a key (or the queue) past its limit.
    let done = false;
    const seen = { key: 0, queue: 0, samples: 0 };
    const watcher = (async () => {
      while (!done) {
        const byKey = await env.tdb.query<{ k: string; n: number }>(
          `SELECT partition_key AS k, count(*)::int AS n FROM weft.weft_workflows WHERE queue = 'pk' AND status = 'running' GROUP BY 1`,
        );
        seen.key = Math.max(seen.key, ...byKey.map((r) => r.n));
        seen.queue = Math.max(
          seen.queue,
          byKey.reduce((s, r) => s + r.n, 0),
        );
        seen.samples++;
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    await Promise.all(handles.map((h) => h.result({ timeout: '60s' })));
    done = true;
    await watcher;
    expect(seen.samples).toBeGreaterThan(5);
    expect(seen.key).toBeLessThanOrEqual(2);
    expect(seen.queue).toBeLessThanOrEqual(7);
    for (const t of tenants) expect(most.get(t)).toBeLessThanOrEqual(2);
    expect(most.get('t0')).toBe(2); // the limit was reached, not merely never approached
  }, 90_000);

  it('keeps a per-key rate limit inside every sliding window while other keys go on', async () => {
    const e = await env.pool.create({ queues: { prl: { partition: { rateLimit: { limit: 2, period: '400ms' } } } } }, (x) =>
      x.register('rec', Recorder),
    );
    await e.bootstrap();
    const ids = [
      ...Array.from({ length: 7 }, (_, i) => ['slow', `prl-slow-${i}`]),
      ...Array.from({ length: 2 }, (_, i) => ['other', `prl-other-${i}`]),
    ];
    const handles = await Promise.all(ids.map(([key, workflowId]) => e.start('rec', {}, { workflowId, queue: 'prl', partitionKey: key })));
    await Promise.all(handles.map((h) => h.result({ timeout: '20s' })));
    const all = await rows('prl-');
    const times = (key: string) =>
      all
        .filter((r) => r.partition_key === key)
        .map((r) => r.admitted_at!.getTime())
        .sort((a, b) => a - b);
    const slow = times('slow');
    for (let i = 0; i + 2 < slow.length; i++) expect(slow[i + 2] - slow[i]).toBeGreaterThanOrEqual(400);
    // The other key is not held behind the slow one's windows.
    expect(Math.max(...times('other'))).toBeLessThan(slow[4]);
  });
});
