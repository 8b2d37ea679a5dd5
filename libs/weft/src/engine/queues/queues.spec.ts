import { useTestEngines, waitFor, codeOf } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Every run of `Recorder` appends its id here when its first step runs. */
const ran: string[] = [];

class Recorder {
  async run(ctx: WorkflowContext) {
    await ctx.step('record', () => void ran.push(ctx.workflowId));
    return 'ok';
  }
}

/** Runs until `release()`; counts itself while it runs. */
let gate: { promise: Promise<void>; release: () => void } = newGate();
function newGate() {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}
class Held {
  async run(ctx: WorkflowContext) {
    await ctx.step('hold', () => gate.promise);
  }
}

describe('queues (real PostgreSQL)', () => {
  const env = useTestEngines();
  const admittedAt = async (prefix: string) =>
    (
      await env.tdb.query<{ t: Date }>(`SELECT admitted_at AS t FROM weft.weft_workflows WHERE id LIKE $1 ORDER BY admitted_at`, [
        `${prefix}%`,
      ])
    ).map((r) => r.t.getTime());

  it('refuses bad queue options and bad starts with typed codes, before anything is written', async () => {
    for (const [queues, option] of [
      [{ q: { concurrency: 0 } }, 'queues.q.concurrency'],
      [{ q: { concurrency: 1.5 } }, 'queues.q.concurrency'],
      [{ q: { concurrency: 100_000 } }, 'queues.q.concurrency'],
      [{ q: { concurrency: 2, perEngineConcurrency: 3 } }, 'queues.q.perEngineConcurrency'],
      [{ q: { rateLimit: { limit: 0, period: '1s' } } }, 'queues.q.rateLimit.limit'],
      [{ q: { rateLimit: { limit: 5, period: '2d' } } }, 'queues.q.rateLimit.period'],
      [{ q: { rateLimit: { limit: 5 } } }, 'queues.q.rateLimit.period'],
      [{ q: { concurency: 5 } }, 'queues.q.concurency'],
      [{ q: 5 }, 'queues.q'],
      [[], 'queues'],
    ] as const) {
      const err = await codeOf(env.pool.create({ queues: queues as never }));
      expect(err?.code).toMatch(/^WEFT_INVALID_(CONFIGURATION|DURATION)$/);
      expect(err?.message).toContain(option);
    }
    const e = await env.pool.create({ queues: { q: { concurrency: 1 } } }, (x) => x.register('rec', Recorder));
    expect((await codeOf(() => e.register({ name: 'x', factory: () => new Recorder(), queue: 'nope' })))?.code).toBe(
      'WEFT_QUEUE_NOT_DECLARED',
    );
    await e.bootstrap();
    expect((await codeOf(e.start('rec', {}, { queue: 'nope' })))?.code).toBe('WEFT_QUEUE_NOT_DECLARED');
    expect((await codeOf(e.start('rec', {}, { queue: 'q', priority: 1001 })))?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await codeOf(e.start('rec', {}, { queue: 'q', priority: 0.5 })))?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await codeOf(e.start('rec', {}, { priority: 3 })))?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect((await e.list({ limit: 10 })).items).toEqual([]);
  });

  it('admits by priority, FIFO within one; enqueued shows in describe and list; a cancelled enqueued run never runs', async () => {
    ran.length = 0;
    const e = await env.pool.create({ backgroundTasks: 'manual', queues: { one: { concurrency: 1 } } }, (x) => x.register('rec', Recorder));
    await e.bootstrap();
    const starts: Array<[string, number]> = [
      ['p0-a', 0],
      ['p5-a', 5],
      ['p0-b', 0],
      ['p-3', -3],
      ['p5-b', 5],
      ['gone', 9],
      ['p0-c', 0],
    ];
    for (const [id, priority] of starts) await e.start('rec', {}, { workflowId: id, queue: 'one', priority });
    const d = await e.describe('p5-a');
    expect(d).toMatchObject({ status: 'enqueued', queue: 'one', priority: 5, admittedAt: null });
    const page = await e.list({ status: 'enqueued' });
    expect(page.items.map((i) => [i.workflowId, i.queue, i.priority])).toEqual(starts.map(([id, p]) => [id, 'one', p]));
    await e.cancel('gone', 'not needed');
    expect((await e.describe('gone')).status).toBe('cancelled');

    for (let i = 0; i < starts.length - 1; i++) {
      const { admitted } = await e.runMaintenance();
      expect(admitted).toBe(1);
      await waitFor(() => ran.length === i + 1, `run ${i + 1}`);
      await waitFor(async () => (await e.list({ status: 'running' })).items.length === 0, 'the run to end');
    }
    expect(ran).toEqual(['p5-a', 'p5-b', 'p0-a', 'p0-b', 'p0-c', 'p-3']);
    expect((await e.describe('p5-a')).admittedAt).toBeInstanceOf(Date);
    expect((await e.describe('gone')).history).toEqual([]);
    expect(e.healthSnapshot().queues).toEqual({ one: { enqueued: 0, running: 1 } }); // as the last pass left it
    expect((await e.runMaintenance()).admitted).toBe(0);
    expect(e.healthSnapshot().queues).toEqual({ one: { enqueued: 0, running: 0 } });
  });

  it('keeps a rate limit inside every sliding window on one engine', async () => {
    const e = await env.pool.create({ queues: { rl: { rateLimit: { limit: 5, period: '400ms' } } } }, (x) => x.register('rec', Recorder));
    await e.bootstrap();
    const startedAt = Date.now();
    const handles = await Promise.all(Array.from({ length: 16 }, (_, i) => e.start('rec', {}, { workflowId: `rl-${i}`, queue: 'rl' })));
    await Promise.all(handles.map((h) => h.result({ timeout: '20s' })));
    const times = await admittedAt('rl-');
    expect(times).toHaveLength(16);
    for (let i = 0; i + 5 < times.length; i++) expect(times[i + 5] - times[i]).toBeGreaterThanOrEqual(400);
    // 16 admissions at 5 per 400 ms need at least three full windows.
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1200);
  });

  it('perEngineConcurrency bounds what each engine admits to itself; concurrency bounds them all', async () => {
    gate = newGate();
    const opts = {
      ownership: 'workflow-lease' as const,
      workflowClaimTtl: 3000,
      workflowClaimRenewInterval: 500,
      queues: { pe: { concurrency: 5, perEngineConcurrency: 2 } },
    };
    const engines: WeftEngine[] = [];
    const passes = new Map<string, number>(); // admission passes per engine (each reports the queue's depth)
    for (const id of ['A', 'B', 'C']) {
      const metrics = { queueDepth: () => void passes.set(id, (passes.get(id) ?? 0) + 1) };
      engines.push(await env.pool.create({ ...opts, engineId: id, metrics }, (x) => x.register('held', Held)));
    }
    await Promise.all(engines.map((x) => x.bootstrap()));
    const [a] = engines;
    const handles = await Promise.all(Array.from({ length: 9 }, (_, i) => a.start('held', {}, { workflowId: `pe-${i}`, queue: 'pe' })));
    const holders = () =>
      env.tdb.query<{ engine_id: string; n: number }>(
        `SELECT c.engine_id, count(*)::int AS n FROM weft.weft_workflows w JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id
         WHERE w.queue = 'pe' AND w.status = 'running' GROUP BY c.engine_id ORDER BY c.engine_id`,
      );
    await waitFor(async () => (await holders()).reduce((s, r) => s + r.n, 0) === 5, 'five running');
    // Two more passes on every engine: none of them may admit past the limits.
    const seen = new Map(passes);
    await waitFor(() => ['A', 'B', 'C'].every((id) => (passes.get(id) ?? 0) >= (seen.get(id) ?? 0) + 2), 'two more passes each');
    const held = await holders();
    expect(held.reduce((s, r) => s + r.n, 0)).toBe(5);
    for (const r of held) expect(r.n).toBeLessThanOrEqual(2);
    expect((await a.list({ status: 'enqueued', idPrefix: 'pe-' })).items).toHaveLength(4);
    gate.release();
    await Promise.all(handles.map((h) => h.result({ timeout: '20s' })));
  });

  it.each(['none', 'workflow-lease'] as const)(
    '%s: a delayed start into a queue waits pending, is enqueued when it fires, and runs when the queue has room',
    async (ownership) => {
      gate = newGate();
      ran.length = 0;
      const e = await env.pool.create({ ownership, queues: { later: { concurrency: 1 } } }, (x) =>
        x.register('held', Held).register('rec', Recorder),
      );
      await e.bootstrap();
      const blocker = await e.start('held', {}, { workflowId: `later-blocker-${ownership}`, queue: 'later' });
      await waitFor(async () => (await blocker.describe()).status === 'running', 'the blocker to run');
      const startedAt = Date.now();
      const delayed = await e.start('rec', {}, { workflowId: `later-delayed-${ownership}`, queue: 'later', startAfter: '300ms' });
      expect(await delayed.describe()).toMatchObject({ status: 'pending', queue: 'later' });
      // It fires into the queue, where the blocker still holds the only slot.
      await waitFor(async () => (await delayed.describe()).status === 'enqueued', 'it to be enqueued', 10_000);
      expect(Date.now() - startedAt).toBeGreaterThanOrEqual(300);
      expect(ran).toEqual([]);
      gate.release();
      await blocker.result({ timeout: '10s' });
      await delayed.result({ timeout: '10s' });
      expect(ran).toEqual([delayed.workflowId]);
      const d = await delayed.describe();
      expect(d.admittedAt!.getTime()).toBeGreaterThanOrEqual((await blocker.describe()).completedAt!.getTime());
    },
  );
});
