import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { Step } from '../nest/decorators/step.decorator.js';
import type { WeftEngine } from './engine.js';

// A workflow started from inside another workflow's step body (the way docs/concepts.md has a
// workflow outlive its parent) runs in its own context: its @Step calls are its own recorded
// steps, and a replay on another engine finds them.

const bodies: string[] = [];

class Ledger {
  @Step({ name: 'ledger.entry' })
  entry(what: string): string {
    bodies.push(what);
    return what.toUpperCase();
  }
}

const ledger = new Ledger();

class Spawned {
  async run(ctx: WorkflowContext) {
    const before = await ledger.entry('first');
    await ctx.waitForSignal('go');
    const after = await ledger.entry('second');
    return `${before}-${after}`;
  }
}

let engineOfSpawner: WeftEngine | undefined;

class Spawner {
  async run(ctx: WorkflowContext, input: { childId: string }) {
    return ctx.step('spawn', async () => {
      const handle = await engineOfSpawner!.start('spawned', {}, { workflowId: input.childId });
      return handle.workflowId;
    });
  }
}

describe('a workflow started from inside a step body', () => {
  const env = useTestEngines();

  it('records its own @Step calls and replays on another engine without NonDeterminismError', async () => {
    bodies.length = 0;
    const register = (e: WeftEngine) => e.register('spawner', Spawner).register('spawned', Spawned);
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    engineOfSpawner = a;
    const childId = 'spawned-from-step';
    await a.start('spawner', { childId }, { workflowId: 'spawner' });
    expect(await a.result('spawner', { timeout: 10_000 })).toBe(childId);

    const recorded = await waitFor(async () => {
      const d = await a.describe(childId);
      return d.history.some((op) => op.name === 'ledger.entry') ? d : undefined;
    }, 'the started workflow to record its @Step call');
    expect(recorded!.history.filter((op) => op.kind === 'step').map((op) => op.name)).toEqual(['ledger.entry']);
    await a.dispose();

    // Another engine replays it: the recorded step is returned, not run again, and the code goes on.
    const b = await env.pool.create({}, register);
    await b.bootstrap();
    await b.signal(childId, 'go');
    expect(await b.result(childId, { timeout: 10_000 })).toBe('FIRST-SECOND');
    expect(bodies).toEqual(['first', 'second']);
    const done = await b.describe(childId);
    expect(done.status).toBe('completed');
    expect(done.history.filter((op) => op.kind === 'step').map((op) => op.name)).toEqual(['ledger.entry', 'ledger.entry']);
  });
});
