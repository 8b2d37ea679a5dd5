import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { StepFailedError, WorkflowFailedError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

const calls: Record<string, number> = {};
const bump = (k: string) => (calls[k] = (calls[k] ?? 0) + 1);

class ThreeSteps {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => input.n + 1);
    const b = await ctx.step('b', () => a * 2);
    const c = await ctx.step('c', async () => ({ total: b + 1, when: new Date(0) }));
    return c;
  }
}

class Flaky {
  async run(ctx: WorkflowContext, input: { key: string; failures: number; nonRetryable?: boolean }) {
    return ctx.step(
      'flaky',
      ({ attempt }) => {
        bump(input.key);
        if (attempt <= input.failures) {
          const err = new Error(`boom ${attempt}`);
          err.name = input.nonRetryable ? 'Fatal' : 'Transient';
          throw err;
        }
        return attempt;
      },
      { retry: { maxAttempts: 4, initialInterval: 5, nonRetryable: ['Fatal'] } },
    );
  }
}

class CatchesStepFailure {
  async run(ctx: WorkflowContext) {
    try {
      await ctx.step(
        'charge',
        () => {
          const err = new Error('card declined');
          err.name = 'CardDeclinedError';
          throw err;
        },
        { retry: { maxAttempts: 2, initialInterval: 1 } },
      );
      return null;
    } catch (err) {
      const failed = err as StepFailedError;
      return {
        code: failed.code,
        attempts: failed.attempts,
        cause: { name: failed.cause.name, message: failed.cause.message },
        stack: failed.cause.stack,
      };
    }
  }
}

class Sleeper {
  async run(ctx: WorkflowContext, input: { ms: number }) {
    const t0 = ctx.now().getTime();
    await ctx.sleep(input.ms);
    const r = ctx.random();
    const id = ctx.uuid();
    return { slept: ctx.now().getTime() - t0 >= input.ms, r, id };
  }
}

class Parallel {
  async run(ctx: WorkflowContext) {
    const [x, y, z] = await Promise.all([ctx.step('x', () => 1), ctx.step('y', () => 2), ctx.sleep(30).then(() => 3)]);
    return x + y + z;
  }
}

describe('WeftEngine (single engine, real PostgreSQL)', () => {
  const env = useTestEngines({ disposeAfterEach: false });
  let engine: WeftEngine;

  beforeAll(async () => {
    engine = await env.pool.create({}, (e) =>
      e
        .register('three', ThreeSteps)
        .register('flaky', Flaky)
        .register('sleeper', Sleeper)
        .register('parallel', Parallel)
        .register('catches', CatchesStepFailure),
    );
    await engine.bootstrap();
  });

  it('runs steps in order and records each one', async () => {
    const h = await engine.start('three', { n: 1 });
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ total: 5, when: '1970-01-01T00:00:00.000Z' });
    const d = await h.describe();
    expect(d.status).toBe('completed');
    expect(d.history.map((o) => [o.seq, o.kind, o.name, o.status])).toEqual([
      [0, 'step', 'a', 'completed'],
      [1, 'step', 'b', 'completed'],
      [2, 'step', 'c', 'completed'],
    ]);
  });

  it('retries a failing step with backoff and records the attempts', async () => {
    const h = await engine.start('flaky', { key: 'retry', failures: 2 });
    await expect(h.result({ timeout: '10s' })).resolves.toBe(3);
    expect(calls.retry).toBe(3);
    expect((await h.describe()).history[0].attempts).toBe(3);
  });

  it('fails at once on a non-retryable error name and fails the workflow', async () => {
    const h = await engine.start('flaky', { key: 'fatal', failures: 9, nonRetryable: true });
    const err = await h.result({ timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).failure?.message).toContain('Fatal: boom 1');
    expect(calls.fatal).toBe(1);
    expect(await h.status()).toBe('failed');
  });

  it("a failed step's error is the ES cause of StepFailedError: name, message and the recorded stack", async () => {
    const h = await engine.start('catches', {});
    const out = (await h.result({ timeout: '10s' })) as { code: string; attempts: number; cause: object; stack: string };
    expect(out).toMatchObject({ code: 'WEFT_STEP_FAILED', attempts: 2, cause: { name: 'CardDeclinedError', message: 'card declined' } });
    expect(out.stack).toMatch(/^CardDeclinedError: card declined\n\s+at /);
  });

  it('sleeps durably and records now/random/uuid', async () => {
    const h = await engine.start('sleeper', { ms: 150 });
    const out = await h.result<{ slept: boolean; r: number; id: string }>({ timeout: '10s' });
    expect(out.slept).toBe(true);
    const d = await h.describe();
    expect(d.history.map((o) => o.kind)).toEqual(['now', 'sleep', 'random', 'uuid', 'now']);
    expect(d.history[2].result).toBe(out.r);
    expect(d.history[3].result).toBe(out.id);
    const timers = await env.tdb.query(`SELECT * FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId]);
    expect(timers).toHaveLength(0);
  });

  it('a timer that fires while its workflow is being loaded reaches the run the load brings up', async () => {
    const h = await engine.start('sleeper', { ms: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'parked',
    );
    type Driver = { stopLive(id: string): void; drive(id: string, firedSeq?: number): Promise<void> };
    const runtime = (engine as unknown as { runtime: Driver }).runtime;
    runtime.stopLive(h.workflowId); // as after an eviction: nothing of it in memory
    // A wake-up starts loading it; the sleep's timer (seq 1) fires before the load is done.
    await Promise.all([runtime.drive(h.workflowId), runtime.drive(h.workflowId, 1)]);
    await expect(h.result({ timeout: '5s' })).resolves.toMatchObject({ slept: false });
  });

  it('runs concurrent steps with Promise.all', async () => {
    const h = await engine.start('parallel', {});
    await expect(h.result({ timeout: '10s' })).resolves.toBe(6);
    const d = await h.describe();
    expect(d.history.map((o) => o.name).sort()).toEqual(['sleep', 'x', 'y']);
  });

  it('lists by status and type with a cursor', async () => {
    await Promise.all([1, 2, 3].map((n) => engine.start('three', { n }, { workflowId: `list-${n}` }).then((h) => h.result())));
    const first = await engine.list({ type: 'three', status: 'completed', limit: 2 });
    expect(first.items).toHaveLength(2);
    expect(first.nextCursor).not.toBeNull();
    const rest = await engine.list({ type: 'three', status: 'completed', limit: 100, cursor: first.nextCursor! });
    const ids = [...first.items, ...rest.items].map((i) => i.workflowId);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual(expect.arrayContaining(['list-1', 'list-2', 'list-3']));
  });

  it('coalesces commits of concurrent workflows (group commit)', async () => {
    const before = engine.commitStatements;
    const handles = await Promise.all(Array.from({ length: 40 }, (_, n) => engine.start('three', { n })));
    await Promise.all(handles.map((h) => h.result({ timeout: '20s' })));
    const statements = engine.commitStatements - before;
    expect(statements).toBeLessThan(40 * 4); // 3 steps + completion each, alone
  });

  it('writes the starts made in one turn with one statement (none goes alone first)', async () => {
    const workflows = engine.store.workflows;
    const batches: number[] = [];
    const original = workflows.startMany;
    workflows.startMany = (rows, ...rest) => {
      batches.push(rows.length);
      return original.call(workflows, rows, ...rest);
    };
    try {
      const handles = await Promise.all(Array.from({ length: 20 }, (_, n) => engine.start('three', { n })));
      expect(batches).toEqual([20]);
      await Promise.all(handles.map((h) => h.result({ timeout: '20s' })));
    } finally {
      workflows.startMany = original;
    }
  });

  it('reports starts, finishes and step durations to the metrics sink', async () => {
    const seen: string[] = [];
    const e = await env.pool.create(
      {
        metrics: {
          workflowStarted: (t) => seen.push(`started:${t}`),
          workflowFinished: (t, s) => seen.push(`finished:${t}:${s}`),
          stepDuration: (sec) => seen.push(sec >= 0 ? 'step' : 'bad'),
        },
      },
      (x) => x.register('three', ThreeSteps),
    );
    await e.bootstrap();
    await (await e.start('three', { n: 1 })).result({ timeout: '10s' });
    expect(seen).toEqual(['started:three', 'step', 'step', 'step', 'finished:three:completed']);
  });

  it('waits for a condition on storage when the workflow runs elsewhere', async () => {
    const h = await engine.start('sleeper', { ms: 50 });
    await waitFor(async () => (await h.status()) === 'completed', 'sleeper completion');
  });
});
