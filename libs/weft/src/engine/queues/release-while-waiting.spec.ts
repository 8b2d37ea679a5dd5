import { useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';
import { SkippingClock } from '../../testing/test-clock.js';

// queues.q.releaseWhileWaiting (docs/queues.md, docs/decisions/0040): a parked run gives its slot
// back and takes one again before its code goes on.

/** Every step body's run: which workflow, which step, when it began and ended (real executions). */
const ledger: Array<{ id: string; step: string; from: number; to: number }> = [];
const gates = new Map<string, () => void>();
const gate = (key: string) => new Promise<void>((r) => gates.set(key, r));
const open = async (key: string) => (await waitFor(() => gates.get(key), `gate ${key}`, 20_000))!();

async function body(ctx: WorkflowContext, step: string, ms: number, gated?: string) {
  await ctx.step(step, async () => {
    const from = Date.now();
    if (gated) await gate(gated);
    else await new Promise((r) => setTimeout(r, ms));
    ledger.push({ id: ctx.workflowId, step, from, to: Date.now() });
  });
}

class Sleeper {
  async run(ctx: WorkflowContext, input: { sleep: number; gateA?: string; gateB?: string }) {
    await body(ctx, 'a', 50, input.gateA);
    await ctx.sleep(input.sleep);
    await body(ctx, 'b', 50, input.gateB);
    return 'done';
  }
}

class Signalled {
  private go = false;
  onGo() {
    this.go = true;
  }
  async run(ctx: WorkflowContext) {
    await body(ctx, 'a', 20);
    await ctx.waitForSignal('first');
    await body(ctx, 'b', 20);
    await ctx.condition(() => this.go);
    await body(ctx, 'c', 20);
  }
}

class Parent {
  async run(ctx: WorkflowContext) {
    await body(ctx, 'a', 20);
    const n = await ctx.executeChild<number>('rw-child', {});
    await body(ctx, 'b', 20);
    return n + 1;
  }
}

class Kid {
  async run(ctx: WorkflowContext) {
    await body(ctx, 'k', 20);
    return 41;
  }
}

const defs: WorkflowDefinition[] = [
  { name: 'sleeper', factory: () => new Sleeper() as never, queue: 'rw' },
  { name: 'signalled', factory: () => new Signalled() as never, queue: 'rw', signalHandlers: { go: 'onGo' } },
  { name: 'rw-parent', factory: () => new Parent() as never, queue: 'rw' },
  { name: 'rw-child', factory: () => new Kid() as never, queue: 'rw' },
];

/** The most step bodies of different workflows running at one instant. */
function maxOverlap(rows: Array<{ from: number; to: number }>): number {
  const edges = rows.flatMap((r) => [
    [r.from, 1],
    [r.to, -1],
  ]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let open = 0;
  let max = 0;
  for (const [, d] of edges) max = Math.max(max, (open += d));
  return max;
}

const stepOf = (id: string, step: string) => ledger.find((l) => l.id === id && l.step === step)!;

describe('releaseWhileWaiting (real PostgreSQL, concurrency 1)', () => {
  const env = useTestEngines();
  const make = async (queue: object = { concurrency: 1, releaseWhileWaiting: true }, clock?: SkippingClock) => {
    const e = await env.pool.create({ queues: { rw: queue }, clock }, (x: WeftEngine) => defs.forEach((d) => x.register(d)));
    await e.bootstrap();
    return e;
  };
  const slots = (ids: string[]) =>
    env.tdb.query<{ id: string; status: string; released: boolean; wanted: boolean }>(
      `SELECT id, status, slot_released_at IS NOT NULL AS released, slot_wanted_at IS NOT NULL AS wanted
       FROM weft.weft_workflows WHERE id = ANY($1) ORDER BY id`,
      [ids],
    );
  beforeEach(() => {
    ledger.length = 0;
    gates.clear();
  });

  it('refuses a releaseWhileWaiting that is not a boolean, naming the option', async () => {
    await expect(env.pool.create({ queues: { rw: { concurrency: 1, releaseWhileWaiting: 'yes' as never } } })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
      message: expect.stringContaining('queues.rw.releaseWhileWaiting'),
    });
  });

  it('two sleepers are asleep at once, their slot given back; they never run at the same time and both complete', async () => {
    const e = await make();
    await e.start('sleeper', { sleep: 1500 }, { workflowId: 's-1' });
    await e.start('sleeper', { sleep: 1500 }, { workflowId: 's-2' });
    // Both asleep, each with its slot released: the second was admitted while the first slept.
    await waitFor(async () => (await slots(['s-1', 's-2'])).every((r) => r.status === 'running' && r.released), 'both asleep', 20_000);
    expect((await e.result('s-1', { timeout: '30s' })) as string).toBe('done');
    expect((await e.result('s-2', { timeout: '30s' })) as string).toBe('done');
    expect(Math.max(stepOf('s-1', 'a').to, stepOf('s-2', 'a').to)).toBeLessThanOrEqual(
      Math.min(stepOf('s-1', 'b').from, stepOf('s-2', 'b').from),
    );
    expect(maxOverlap(ledger)).toBe(1);
    expect((await slots(['s-1', 's-2'])).every((r) => !r.released && !r.wanted)).toBe(true);
  });

  it('a wake while the slot is taken waits for it: a signal and a condition go on only once the holder parks or ends', async () => {
    const e = await make();
    await e.start('signalled', {}, { workflowId: 'g-1' });
    await waitFor(async () => (await slots(['g-1']))[0]?.released, 'g-1 parked on its signal', 20_000);
    // The slot is free: a sleeper takes it and holds it in a step until its gate opens.
    await e.start('sleeper', { sleep: 1, gateA: 'hold' }, { workflowId: 'h-1' });
    await waitFor(() => gates.get('hold'), 'h-1 to hold the slot', 20_000);
    await e.signal('g-1', 'first', null);
    await waitFor(async () => (await slots(['g-1']))[0]?.wanted, 'g-1 to want its slot back', 20_000);
    expect(ledger.some((l) => l.id === 'g-1' && l.step === 'b')).toBe(false);
    await open('hold');
    await e.signal('g-1', 'go', null);
    await e.result('g-1', { timeout: '30s' });
    await e.result('h-1', { timeout: '30s' });
    // g-1 went on only after h-1 gave the slot back (h-1 parked on its sleep after step a).
    expect(stepOf('g-1', 'b').from).toBeGreaterThanOrEqual(stepOf('h-1', 'a').to);
    expect(maxOverlap(ledger)).toBe(1);
  });

  it('a woken run takes the freed slot before fresh enqueued work', async () => {
    // w-1 wakes when the test says (its hour passes at a jump of the clock), never before w-2 holds the slot.
    const clock = new SkippingClock();
    const e = await make(undefined, clock);
    await e.start('sleeper', { sleep: 3_600_000 }, { workflowId: 'w-1' });
    await waitFor(async () => (await slots(['w-1']))[0]?.released, 'w-1 asleep', 20_000);
    await e.start('sleeper', { sleep: 1, gateA: 'hold2' }, { workflowId: 'w-2' });
    await waitFor(() => gates.get('hold2'), 'w-2 to hold the slot', 20_000);
    // w-1 wakes while w-2 holds the slot; then fresh work arrives behind it.
    clock.jumpTo(clock.now() + 3_600_000);
    await waitFor(async () => (await slots(['w-1']))[0]?.wanted, 'w-1 to want its slot back', 20_000);
    await e.start('sleeper', { sleep: 1 }, { workflowId: 'w-3' });
    await open('hold2');
    for (const id of ['w-1', 'w-2', 'w-3']) await e.result(id, { timeout: '30s' });
    expect(stepOf('w-1', 'b').from).toBeLessThan(stepOf('w-3', 'a').from);
    expect(maxOverlap(ledger)).toBe(1);
  });

  it('a child in its parent’s queue goes through the queue: the parent gives its slot back while it waits', async () => {
    const e = await make();
    await e.start('rw-parent', {}, { workflowId: 'p-1' });
    expect(await e.result('p-1', { timeout: '30s' })).toBe(42);
    const child = await env.tdb.query<{ queue: string | null }>(`SELECT queue FROM weft.weft_workflows WHERE parent_id = 'p-1'`);
    expect(child).toEqual([{ queue: 'rw' }]);
    expect(maxOverlap(ledger)).toBe(1);
  });

  it('without the option a parked run keeps its slot', async () => {
    const e = await make({ concurrency: 1 });
    await e.start('sleeper', { sleep: 500 }, { workflowId: 'k-1' });
    await e.start('sleeper', { sleep: 1 }, { workflowId: 'k-2' });
    await e.result('k-2', { timeout: '30s' });
    expect(stepOf('k-2', 'a').from).toBeGreaterThanOrEqual(stepOf('k-1', 'b').to);
    expect((await slots(['k-1'])).every((r) => !r.released)).toBe(true);
  });
});
