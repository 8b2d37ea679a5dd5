// Singleton starts (docs/queues.md): at most one live workflow of a type per key.
import { useTestEngines, waitFor, codeOf } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Runs until `release()`. */
let gate: { promise: Promise<void>; release: () => void } = newGate();
function newGate() {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}
const bodies: string[] = [];
class Held {
  async run(ctx: WorkflowContext, input: { n: number }) {
    await ctx.step('hold', async () => {
      bodies.push(ctx.workflowId);
      await gate.promise;
    });
    return input.n;
  }
}

describe('singleton starts (real PostgreSQL)', () => {
  const env = useTestEngines();
  const live = (key: string) =>
    env.tdb.query<{ id: string; status: string }>(
      `SELECT id, status FROM weft.weft_workflows WHERE singleton_key = $1 AND status NOT IN ('completed','failed','cancelled','timed_out')`,
      [key],
    );

  it('a second start returns the live one; reject refuses with a typed error; after it ends a start runs anew', async () => {
    gate = newGate();
    bodies.length = 0;
    const e = await env.pool.create({}, (x) => x.register('held', Held));
    await e.bootstrap();
    const first = await e.start('held', { n: 1 }, { singleton: 'nightly' });
    const again = await e.start('held', { n: 2 }, { singleton: { key: 'nightly', onConflict: 'return-existing' }, workflowId: 'other-id' });
    expect(again.workflowId).toBe(first.workflowId);
    const refused = await codeOf(e.start('held', { n: 3 }, { singleton: { key: 'nightly', onConflict: 'reject' } }));
    expect(refused?.code).toBe('WEFT_SINGLETON_CONFLICT');
    expect((refused?.err as { workflowId?: string }).workflowId).toBe(first.workflowId);
    // Another key, or another type's same key, is its own singleton.
    const other = await e.start('held', { n: 4 }, { singleton: 'weekly' });
    expect(other.workflowId).not.toBe(first.workflowId);
    expect(await live('nightly')).toEqual([{ id: first.workflowId, status: 'running' }]);
    expect((await e.list({ limit: 10 })).items.map((i) => i.workflowId).sort()).toEqual([first.workflowId, other.workflowId].sort());
    gate.release();
    expect(await first.result({ timeout: '10s' })).toBe(1);
    gate = newGate();
    gate.release();
    const next = await e.start('held', { n: 5 }, { singleton: 'nightly' });
    expect(next.workflowId).not.toBe(first.workflowId);
    expect(await next.result({ timeout: '10s' })).toBe(5);
  });

  it('concurrent starts on two engines with one key make one workflow, and every caller gets its handle', async () => {
    gate = newGate();
    bodies.length = 0;
    const opts = { ownership: 'workflow-lease' as const, workflowClaimTtl: 3000, workflowClaimRenewInterval: 500 };
    const engines: WeftEngine[] = [];
    for (const id of ['A', 'B']) engines.push(await env.pool.create({ ...opts, engineId: id }, (x) => x.register('held', Held)));
    await Promise.all(engines.map((x) => x.bootstrap()));
    const handles = await Promise.all(
      Array.from({ length: 20 }, (_, i) => engines[i % 2].start('held', { n: i }, { singleton: 'only-one' })),
    );
    const ids = new Set(handles.map((h) => h.workflowId));
    expect(ids.size).toBe(1);
    expect(await live('only-one')).toHaveLength(1);
    await waitFor(() => bodies.length >= 1, 'the one run');
    gate.release();
    await handles[0].result({ timeout: '10s' });
    expect(bodies).toHaveLength(1);
  });

  it("onConflict 'queue' on two engines: each start runs once, one at a time, in the order they were made", async () => {
    const order: string[] = [];
    let inFlight = 0;
    let most = 0;
    class Serial {
      async run(ctx: WorkflowContext, input: { n: number }) {
        await ctx.step('work', async () => {
          most = Math.max(most, ++inFlight);
          await new Promise((r) => setTimeout(r, 50));
          order.push(String(input.n));
          inFlight--;
        });
        return input.n;
      }
    }
    const opts = { timerPollInterval: 100, ownership: 'workflow-lease' as const, workflowClaimTtl: 3000, workflowClaimRenewInterval: 500 };
    const engines: WeftEngine[] = [];
    for (const id of ['A', 'B']) engines.push(await env.pool.create({ ...opts, engineId: id }, (x) => x.register('serial', Serial)));
    await Promise.all(engines.map((x) => x.bootstrap()));
    const handles = [];
    for (let n = 0; n < 6; n++) {
      handles.push(await engines[n % 2].start('serial', { n }, { singleton: { key: 'one-at-a-time', onConflict: 'queue' } }));
    }
    expect(new Set(handles.map((h) => h.workflowId)).size).toBe(6);
    expect(await Promise.all(handles.map((h) => h.result({ timeout: '20s' })))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(order).toEqual(['0', '1', '2', '3', '4', '5']);
    expect(most).toBe(1);
  });

  it("onConflict 'queue': the holder's end wakes the next start at once, on another engine, by a run's end or a cancel", async () => {
    gate = newGate();
    bodies.length = 0;
    const opts = { timerPollInterval: 100, ownership: 'workflow-lease' as const, workflowClaimTtl: 3000, workflowClaimRenewInterval: 500 };
    const engines: WeftEngine[] = [];
    for (const id of ['A', 'B']) engines.push(await env.pool.create({ ...opts, engineId: id }, (x) => x.register('held', Held)));
    await Promise.all(engines.map((x) => x.bootstrap()));
    const key = { key: 'woken', onConflict: 'queue' as const };
    const holder = await engines[0].start('held', { n: 0 }, { singleton: 'woken' });
    const w1 = await engines[1].start('held', { n: 1 }, { singleton: key });
    const w2 = await engines[1].start('held', { n: 2 }, { singleton: key });
    /** Once a fire found the key held and set its recheck, the waiter's timer goes an hour out: only a wake starts it now. */
    const farOut = async (id: string) => {
      await waitFor(
        async () =>
          (
            await env.tdb.query(
              `SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1 AND kind = 'delayed-start' AND fire_at > clock_timestamp() + interval '1 second'`,
              [id],
            )
          ).length === 1,
        `${id} rechecked`,
        20_000,
      );
      await env.tdb.query(
        `UPDATE weft.weft_timers SET fire_at = clock_timestamp() + interval '1 hour' WHERE workflow_id = $1 AND kind = 'delayed-start'`,
        [id],
      );
    };
    await farOut(w1.workflowId);
    await farOut(w2.workflowId);
    // An external end (a cancel, from the other engine) wakes the first waiter.
    await engines[1].cancel(holder.workflowId);
    await waitFor(() => bodies.includes(w1.workflowId), 'the first waiter to run', 30_000);
    await farOut(w2.workflowId);
    // A run's end wakes the second.
    gate.release();
    expect(await w1.result({ timeout: '30s' })).toBe(1);
    expect(await w2.result({ timeout: '30s' })).toBe(2);
  });

  it('refuses bad singleton options before anything is written', async () => {
    const e = await env.pool.create({}, (x) => x.register('held', Held));
    await e.bootstrap();
    const count = async () => (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows`))[0].n;
    const before = await count();
    for (const [singleton, what] of [
      ['', 'must not be empty'],
      [{ key: 'k', onConflict: 'replace' }, 'must be one of'],
      [{ onConflict: 'reject' }, 'must be a string'],
    ] as const) {
      const err = await codeOf(e.start('held', { n: 0 }, { singleton: singleton as never }));
      expect(err?.code).toBe('WEFT_INVALID_ARGUMENT');
      expect(err?.message).toContain(what);
    }
    const combo = await codeOf(e.start('held', { n: 0 }, { singleton: 'k', idPolicy: 'start-new-if-terminal' }));
    expect(combo?.code).toBe('WEFT_INVALID_ARGUMENT');
    expect(await count()).toBe(before);
  });
});
