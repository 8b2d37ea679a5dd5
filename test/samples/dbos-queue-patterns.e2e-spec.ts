// A port, written for Weft, of DBOS's queue-patterns demo (dbos-inc/dbos-demo-apps,
// typescript/queue-patterns): fair queueing per tenant (a manager workflow holds a slot of a
// partitioned queue while its work runs in a queue limited per engine), a rate-limited queue, and
// a debouncer into a queue. Each pattern is Weft's own option (a partitioned queue, `rateLimit`,
// `debounce`), with no queue per tenant and no home-made debouncer. Times are scaled down
// (5 s of work: 300 ms; 10 s windows: 1 s and 600 ms). The demo's UI reads the same pipelines
// these checks read.
import { WeftEngine, type WorkflowContext, type WorkflowDefinition } from '@weft/nest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/engine.js';

const CONCURRENCY_QUEUE = 'concurrency-queue';
const PARTITIONED_QUEUE = 'partitioned-queue';
const RATE_LIMITED_QUEUE = 'rate-limited-queue';
const DEBOUNCER_QUEUE = 'debouncer-queue';
const WORK_MS = 300;

/** What ran, when (in this process: one engine runs everything). */
const events: Array<{ what: string; id: string; tenant?: string; input?: string; at: number }> = [];
const note = (ctx: WorkflowContext, what: string, extra: { tenant?: string; input?: string } = {}) =>
  events.push({ what, id: ctx.workflowId, ...extra, at: Date.now() });

// Fair queueing: the work sleeps; its manager holds the tenant's slot of the partitioned queue
// while the work runs in the queue limited to 4 per engine, so both limits apply.
const fairQueueWorkflow: WorkflowDefinition = {
  name: 'fair_queue_workflow',
  queue: CONCURRENCY_QUEUE,
  factory: () => ({
    async run(ctx: WorkflowContext, input: { tenant: string }) {
      await ctx.step('begin', async () => note(ctx, 'work-begin', input));
      await ctx.sleep(WORK_MS);
      await ctx.step('end', async () => note(ctx, 'work-end', input));
    },
  }),
};

const fairQueueConcurrencyManager: WorkflowDefinition = {
  name: 'fair_queue_concurrency_manager',
  queue: PARTITIONED_QUEUE,
  partitionKey: (input: { tenant: string }) => input.tenant,
  factory: () => ({
    async run(ctx: WorkflowContext, input: { tenant: string }) {
      await ctx.step('admitted', async () => note(ctx, 'manager-admitted', input));
      return ctx.executeChild('fair_queue_workflow', input);
    },
  }),
};

const rateLimitedQueueWorkflow: WorkflowDefinition = {
  name: 'rate_limited_queue_workflow',
  queue: RATE_LIMITED_QUEUE,
  factory: () => ({
    async run(ctx: WorkflowContext) {
      await ctx.sleep(WORK_MS);
    },
  }),
};

const debouncerWorkflow: WorkflowDefinition = {
  name: 'debouncer_workflow',
  factory: () => ({
    async run(ctx: WorkflowContext, args: { tenant: string; input: string }) {
      await ctx.step('execute', async () => note(ctx, 'debounced', args));
      await ctx.sleep(WORK_MS);
    },
  }),
};

/** The demo's routes, as functions. */
function app(engine: WeftEngine) {
  const enqueueForTenant = (tenant: string) => engine.start('fair_queue_concurrency_manager', { tenant });
  return {
    enqueueForTenant,
    /** 50 managers over four tenants, one of them (favored) twice as likely, in random order. */
    async randomMix(): Promise<{ total: number; favored: string }> {
      const tenants = ['alice', 'bob', 'clark', 'dave'];
      const favored = tenants[Math.floor(Math.random() * tenants.length)];
      const weighted = tenants.flatMap((t) => (t === favored ? [t, t] : [t]));
      const picks = Array.from({ length: 50 }, () => weighted[Math.floor(Math.random() * weighted.length)]);
      // Every tenant at least once, whatever the draw.
      tenants.forEach((t, i) => (picks[i * 2 + 1] = t));
      for (const t of picks) await enqueueForTenant(t);
      return { total: picks.length, favored };
    },
    rateLimited: () => engine.start('rate_limited_queue_workflow', {}),
    /** Each submission for a tenant pushes its run to 600 ms after the last one, with the last input. */
    debounce: (tenant: string, input: string) =>
      engine.start('debouncer_workflow', { tenant, input }, { queue: DEBOUNCER_QUEUE, debounce: { key: tenant, delay: '600ms' } }),
    /** The debouncer pipeline: waiting in its window (pending), then queued or running, then completed. */
    async debouncerPipeline() {
      const page = await engine.list({ type: 'debouncer_workflow', include: ['input'], limit: 100 });
      const stage = (s: string[]) =>
        page.items
          .filter((w) => s.includes(w.status))
          .map((w) => ({ workflowId: w.workflowId, ...(w.input as { tenant: string; input: string }) }));
      return { delayed: stage(['pending']), running: stage(['enqueued', 'running']), completed: stage(['completed']) };
    },
  };
}

/** The most intervals open at once. */
function maxOverlap(intervals: Array<[number, number]>): number {
  const edges = intervals.flatMap(([a, b]) => [
    [a, 1],
    [b, -1],
  ]);
  edges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (open += d));
  return max;
}

describe("DBOS's queue-patterns, ported to Weft", () => {
  let tdb: TestDatabase;
  let engine: WeftEngine;
  let demo: ReturnType<typeof app>;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    engine = await WeftEngine.create({
      database: { url: tdb.url },
      schema: 'weft',
      timerPollInterval: 100,
      logger: { log: () => undefined, warn: () => undefined, error: (m) => process.stderr.write(`${m}\n`) },
      queues: {
        [CONCURRENCY_QUEUE]: { perEngineConcurrency: 4 },
        [PARTITIONED_QUEUE]: { partition: { concurrency: 2 } },
        [RATE_LIMITED_QUEUE]: { rateLimit: { limit: 2, period: '1s' } },
        [DEBOUNCER_QUEUE]: {},
      },
    });
    for (const def of [fairQueueWorkflow, fairQueueConcurrencyManager, rateLimitedQueueWorkflow, debouncerWorkflow]) engine.register(def);
    await engine.bootstrap();
    demo = app(engine);
  }, 60_000);
  afterAll(async () => {
    await engine?.dispose();
    await tdb?.drop();
  });

  it('fair queueing: at most 2 managers per tenant and 4 works per engine; the favored tenant cannot hold the others back', async () => {
    const { total, favored } = await demo.randomMix();
    const completed = async () => (await engine.list({ type: 'fair_queue_concurrency_manager', status: 'completed', limit: 100 })).items;
    await waitFor(async () => (await completed()).length === total, 'every manager to complete', 120_000, 100);
    expect(events.filter((e) => e.what === 'work-end')).toHaveLength(total);
    const works = events.filter((e) => e.what === 'work-begin');
    const intervals = (tenant?: string) =>
      works
        .filter((w) => tenant === undefined || w.tenant === tenant)
        .map((w) => [w.at, events.find((e) => e.what === 'work-end' && e.id === w.id)!.at] as [number, number]);
    expect(maxOverlap(intervals())).toBeLessThanOrEqual(4);
    expect(maxOverlap(intervals())).toBe(4); // the engine's limit was reached
    for (const t of ['alice', 'bob', 'clark', 'dave']) expect(maxOverlap(intervals(t)), t).toBeLessThanOrEqual(2);
    // Every tenant's first manager was admitted before the favored tenant's third.
    const admitted = events.filter((e) => e.what === 'manager-admitted');
    const favoredThird = admitted.filter((e) => e.tenant === favored)[2];
    for (const t of ['alice', 'bob', 'clark', 'dave'].filter((x) => x !== favored)) {
      expect(admitted.find((e) => e.tenant === t)!.at, t).toBeLessThanOrEqual(favoredThird.at);
    }
  }, 180_000);

  it('rate limiting: no more than 2 starts in any 1-second window', async () => {
    const handles = [];
    for (let i = 0; i < 6; i++) handles.push(await demo.rateLimited());
    await Promise.all(handles.map((h) => h.result({ timeout: '30s' })));
    const admitted = (await Promise.all(handles.map((h) => engine.describe(h.workflowId)))).map((d) => d.admittedAt!.getTime());
    admitted.sort((a, b) => a - b);
    for (let i = 0; i + 2 < admitted.length; i++) expect(admitted[i + 2] - admitted[i]).toBeGreaterThanOrEqual(1000);
  }, 60_000);

  it('debouncing: per tenant, one run with the last input submitted, 600 ms after it, through the debouncer queue', async () => {
    const calls: Array<[string, string]> = [
      ['alice', 'a1'],
      ['bob', 'b1'],
      ['alice', 'a2'],
      ['alice', 'a3'],
      ['bob', 'b2'],
    ];
    const ids: Record<string, Set<string>> = { alice: new Set(), bob: new Set() };
    for (const [tenant, input] of calls) ids[tenant].add((await demo.debounce(tenant, input)).workflowId);
    const lastCallAt = Date.now();
    expect([ids.alice.size, ids.bob.size]).toEqual([1, 1]);
    // While the windows are open: one delayed workflow per tenant, holding its latest input.
    const open = await demo.debouncerPipeline();
    expect(open.delayed.map((d) => [d.tenant, d.input]).sort()).toEqual([
      ['alice', 'a3'],
      ['bob', 'b2'],
    ]);
    await waitFor(async () => (await demo.debouncerPipeline()).completed.length === 2, 'both debounced runs', 30_000, 100);
    const ran = events.filter((e) => e.what === 'debounced');
    expect(ran.map((e) => [e.tenant, e.input]).sort()).toEqual([
      ['alice', 'a3'],
      ['bob', 'b2'],
    ]);
    for (const e of ran) expect(e.at - lastCallAt).toBeGreaterThanOrEqual(500);
    const [alice] = ids.alice;
    expect((await engine.describe(alice)).queue).toBe(DEBOUNCER_QUEUE);
  }, 60_000);
});
