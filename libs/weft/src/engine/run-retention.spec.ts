import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

// A run launched from another run's commit outcome (a queue's hand-off, a continue-as-new, a load
// woken from a run's message) or started by one (a child) was made in that run's async context:
// its promises kept that run's context alive, with its Execution, and the next run launched from
// it the same. A backlog's
// finished runs, or a continue-as-new chain's ended runs, all stayed in memory
// (docs/decisions/0064). Counted here with weak references to the runs' instances after a GC.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const instances: Record<string, Array<WeakRef<object>>> = {};
const keep = (group: string, o: object) => (instances[group] ??= []).push(new WeakRef(o));

/** How many of `group`'s instances are still reachable once the heap is collected. */
async function alive(group: string): Promise<number> {
  for (let i = 0; i < 3; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
  }
  return (instances[group] ?? []).filter((r) => r.deref() !== undefined).length;
}

let release: () => void = () => undefined;
const held = new Promise<void>((r) => (release = r));

/** One step; the runs told to hold wait in it until the test releases them. */
class OneStep {
  /** Some weight per run, so what is kept shows. */
  readonly ballast = new Array(2_000).fill(0);
  async run(ctx: WorkflowContext, input: { hold: boolean }) {
    keep(input.hold ? 'holding' : 'queued', this);
    return ctx.step('one', async () => (input.hold ? held.then(() => 1) : 1));
  }
}

/** Continues as new `runs` times, then waits for a signal that never comes. */
class Continues {
  readonly ballast = new Array(2_000).fill(0);
  async run(ctx: WorkflowContext, input: { k: number; runs: number }) {
    keep('continued', this);
    await ctx.step('tick', () => input.k);
    if (input.k + 1 < input.runs) return ctx.continueAsNew({ k: input.k + 1, runs: input.runs });
    return ctx.waitForSignal('never', { timeout: 60_000 });
  }
}

/** Waits for a signal that never comes. */
class Waits {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal('never', { timeout: 60_000 });
  }
}

/** Starts a child that outlives it, then continues as new, `runs` times. */
class Spawns {
  readonly ballast = new Array(2_000).fill(0);
  async run(ctx: WorkflowContext, input: { k: number; runs: number }) {
    keep('spawning', this);
    await ctx.startChild('waits', {}, { workflowId: `child-${input.k}` });
    if (input.k + 1 < input.runs) return ctx.continueAsNew({ k: input.k + 1, runs: input.runs });
    return ctx.waitForSignal('never', { timeout: 60_000 });
  }
}

describe('runs launched from other runs keep none of them alive (real PostgreSQL)', () => {
  const env = useTestEngines();

  it("a queue's finished runs are collected while the runs their slots went to still run", async () => {
    const e = await env.pool.create({ ownership: 'workflow-lease', queues: { q: { concurrency: 5 } } }, (x) =>
      x.register('one-step', OneStep),
    );
    await e.bootstrap();
    // Admitted in start order: the last five hold their slots until released.
    const handles = await Promise.all(Array.from({ length: 200 }, (_, i) => e.start('one-step', { hold: i >= 195 }, { queue: 'q' })));
    await Promise.all(handles.slice(0, 195).map((h) => h.result({ timeout: '60s' })));
    await waitFor(() => (instances.holding ?? []).length === 5, 'the last five running');
    expect(instances.queued).toHaveLength(195);
    // Before: all 195 (each run launched by a hand-off kept the run that handed its slot on).
    expect(await alive('queued')).toBeLessThanOrEqual(10);
    release();
    await Promise.all(handles.slice(195).map((h) => h.result({ timeout: '60s' })));
  });

  it("a continue-as-new chain's ended runs are collected while its latest run waits", async () => {
    const e = await env.pool.create({}, (x) => x.register('continues', Continues));
    await e.bootstrap();
    await e.start('continues', { k: 0, runs: 60 }, { workflowId: 'continues-1' });
    await waitFor(() => (instances.continued ?? []).length === 60, 'the 60th run running');
    // Before: all 60 (each run was made in the context of the one before).
    expect(await alive('continued')).toBeLessThanOrEqual(2);
  });

  it('children that outlive the runs that started them keep none of those runs', async () => {
    const e = await env.pool.create({}, (x) => x.register('spawns', Spawns).register('waits', Waits));
    await e.bootstrap();
    await e.start('spawns', { k: 0, runs: 30 }, { workflowId: 'spawns-1' });
    await waitFor(() => (instances.spawning ?? []).length === 30, 'the 30th run running');
    await waitFor(async () => (await e.describe('child-29'))?.status === 'running', 'the last child running');
    expect(await alive('spawning')).toBeLessThanOrEqual(2);
  });
});
