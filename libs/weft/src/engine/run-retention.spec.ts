import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

// A run launched from another run's commit outcome (a queue's hand-off, a continue-as-new, a load
// woken from a run's message) or started by one (a child) was made in that run's async context:
// its promises kept that run's context alive, with its Execution, and the next run launched from
// it the same. A backlog's
// finished runs, or a continue-as-new chain's ended runs, all stayed in memory
// (docs/decisions/0064). Counted here by finalizing the runs' instances after a GC.

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

// Counted with a FinalizationRegistry, not WeakRefs: a WeakRef's deref() keeps its target alive
// until the end of the job, so a count taken that way stays up once it has seen a run.
const made: Record<string, number> = {};
const collected: Record<string, number> = {};
const finalized = new FinalizationRegistry<string>((group) => (collected[group] = (collected[group] ?? 0) + 1));
const keep = (group: string, o: object) => {
  made[group] = (made[group] ?? 0) + 1;
  finalized.register(o, group);
};

/**
 * How many of `group`'s instances are still reachable, collecting until at most `max` are left
 * (what a run still being wound up holds goes within a few turns) or 3 s pass.
 */
async function collectedTo(group: string, max: number): Promise<number> {
  const deadline = Date.now() + 3_000;
  for (;;) {
    gc();
    await new Promise((r) => setTimeout(r, 20)); // the finalizers run after the collection
    const n = (made[group] ?? 0) - (collected[group] ?? 0);
    if (n <= max || Date.now() > deadline) return n;
  }
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

/** A transactional step that waits for the others: each holds a connection of the pool at once. */
let txRelease: () => void = () => undefined;
const txHeld = new Promise<void>((r) => (txRelease = r));
class HoldsConnection {
  readonly ballast = new Array(2_000).fill(0);
  async run(ctx: WorkflowContext) {
    keep('connection', this);
    return ctx.transaction('hold', async (manager) => {
      await manager.query('SELECT 1');
      await txHeld;
      return 1;
    });
  }
}

const tokens: Record<string, string> = {};

/** One step completed from outside (engine.completeStep). */
class Approval {
  readonly ballast = new Array(2_000).fill(0);
  async run(ctx: WorkflowContext) {
    keep(ctx.workflowId, this);
    return ctx.step('approve', ({ completionToken }) => void (tokens[ctx.workflowId] = completionToken!), {
      complete: 'external',
      timeout: '60s',
    });
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
    await waitFor(() => made.holding === 5, 'the last five running');
    expect(made.queued).toBe(195);
    // Before: all 195 (each run launched by a hand-off kept the run that handed its slot on).
    expect(await collectedTo('queued', 10)).toBeLessThanOrEqual(10);
    release();
    await Promise.all(handles.slice(195).map((h) => h.result({ timeout: '60s' })));
  });

  it("a continue-as-new chain's ended runs are collected while its latest run waits", async () => {
    const e = await env.pool.create({}, (x) => x.register('continues', Continues));
    await e.bootstrap();
    await e.start('continues', { k: 0, runs: 60 }, { workflowId: 'continues-1' });
    await waitFor(() => made.continued === 60, 'the 60th run running');
    // Before: all 60 (each run was made in the context of the one before).
    expect(await collectedTo('continued', 2)).toBeLessThanOrEqual(2);
  });

  it('children that outlive the runs that started them keep none of those runs', async () => {
    const e = await env.pool.create({}, (x) => x.register('spawns', Spawns).register('waits', Waits));
    await e.bootstrap();
    await e.start('spawns', { k: 0, runs: 30 }, { workflowId: 'spawns-1' });
    await waitFor(() => made.spawning === 30, 'the 30th run running');
    const child = () => e.describe('child-29').catch(() => null); // not started yet: not found
    await waitFor(async () => (await child())?.status === 'running', 'the last child running');
    expect(await collectedTo('spawning', 2)).toBeLessThanOrEqual(2);
  });

  it("an external step's run is collected once it ends, while the completions poll goes on for others", async () => {
    const e = await env.pool.create({}, (x) => x.register('approval', Approval));
    await e.bootstrap();
    await e.start('approval', {}, { workflowId: 'approval-1' }); // its wait arms the poll
    await waitFor(() => tokens['approval-1'], 'the first token');
    await e.start('approval', {}, { workflowId: 'approval-2' }); // keeps the poll going
    await waitFor(() => tokens['approval-2'], 'the second token');
    await e.completeStep(tokens['approval-1'], 'yes');
    await e.result('approval-1', { timeout: '10s' });
    // Before: the poll's timer, armed in the context of the step whose wait first armed it and
    // re-armed from there while any step waits, kept that step's run.
    expect(await collectedTo('approval-1', 0)).toBe(0);
    await e.completeStep(tokens['approval-2'], 'yes');
  });

  it("the pool's connections keep none of the runs whose statements opened them or released them last", async () => {
    const e = await env.pool.create({ database: { url: env.tdb.url, poolSize: 12 } }, (x) =>
      x.register('holds-connection', HoldsConnection),
    );
    await e.bootstrap();
    // Ten transactional steps at once: the pool opens connections for them, inside their runs.
    const handles = await Promise.all(Array.from({ length: 10 }, () => e.start('holds-connection', {})));
    await waitFor(() => made.connection === 10, 'the ten runs in their steps');
    txRelease();
    await Promise.all(handles.map((h) => h.result({ timeout: '10s' })));
    // Before: the connections each kept the run they were opened in (their sockets), and the idle
    // ones the run that released them last (their idle timers), for as long as they were open.
    expect(await collectedTo('connection', 0)).toBe(0);
  });
});
