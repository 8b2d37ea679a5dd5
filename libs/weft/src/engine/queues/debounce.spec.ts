// Debounced starts (docs/queues.md, docs/decisions/0034): one start per window, with the last
// call's input, every caller holding the same handle, across engines.
import { useTestEngines, waitFor, codeOf } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

const runs: Array<{ id: string; input: string }> = [];
/** The runs whose input starts with `prefix` (each test its own): a window a test left open may start during the next. */
const runsOf = (prefix: string) => runs.filter((r) => r.input.startsWith(prefix));
class Echo {
  async run(ctx: WorkflowContext, input: string) {
    await ctx.step('record', async () => void runs.push({ id: ctx.workflowId, input }));
    return input;
  }
}

describe('debounced starts (real PostgreSQL)', () => {
  const env = useTestEngines();
  const fast = { timerPollInterval: 100 };

  it('calls within the window start once, after the last call, with its input; all get one handle', async () => {
    runs.length = 0;
    const e = await env.pool.create(fast, (x) => x.register('echo', Echo));
    await e.bootstrap();
    const handles = [];
    for (let i = 0; i < 5; i++) handles.push(await e.start('echo', `v${i}`, { debounce: { key: 'user-1', delay: '400ms' } }));
    expect(new Set(handles.map((h) => h.workflowId)).size).toBe(1);
    expect(await handles[0].result({ timeout: '10s' })).toBe('v4');
    expect(runsOf('v')).toEqual([{ id: handles[0].workflowId, input: 'v4' }]);
    // Another key is its own window; after the start, a call opens a new window.
    const other = await e.start('echo', 'o', { debounce: { key: 'user-2', delay: '50ms' } });
    const next = await e.start('echo', 'n', { debounce: { key: 'user-1', delay: '50ms' } });
    expect(next.workflowId).not.toBe(handles[0].workflowId);
    expect(await other.result({ timeout: '10s' })).toBe('o');
    expect(await next.result({ timeout: '10s' })).toBe('n');
  });

  it('maxDelay starts the window at most that long after its first call, however often it is called', async () => {
    runs.length = 0;
    const e = await env.pool.create(fast, (x) => x.register('echo', Echo));
    await e.bootstrap();
    const first = await e.start('echo', 'c0', { debounce: { key: 'busy', delay: '300ms', maxDelay: '600ms' } });
    let i = 1;
    // Calls every 50 ms would push a window without maxDelay forever: this one starts meanwhile.
    while (runs.length === 0 && i < 200) {
      await e.start('echo', `c${i++}`, { debounce: { key: 'busy', delay: '300ms', maxDelay: '600ms' } });
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(runs.length).toBeGreaterThan(0);
    expect(runs[0].id).toBe(first.workflowId);
    expect(await first.result({ timeout: '10s' })).toBe(runs[0].input);
  });

  it('two engines calling one key, in turn and at once, start one workflow with the last input', async () => {
    runs.length = 0;
    const opts = { ...fast, ownership: 'workflow-lease' as const, workflowClaimTtl: 3000, workflowClaimRenewInterval: 500 };
    const engines: WeftEngine[] = [];
    for (const id of ['A', 'B']) engines.push(await env.pool.create({ ...opts, engineId: id }, (x) => x.register('echo', Echo)));
    await Promise.all(engines.map((x) => x.bootstrap()));
    const ids = new Set<string>();
    for (let i = 0; i < 10; i++)
      ids.add((await engines[i % 2].start('echo', `t${i}`, { debounce: { key: 'k', delay: '500ms' } })).workflowId);
    expect(ids.size).toBe(1);
    const [id] = ids;
    await waitFor(() => runsOf('t').length >= 1, 'the one run');
    expect(runsOf('t')).toEqual([{ id, input: 't9' }]);
    // At once: one window, one start.
    runs.length = 0;
    const burst = await Promise.all(
      Array.from({ length: 20 }, (_, i) => engines[i % 2].start('echo', `b${i}`, { debounce: { key: 'burst', delay: '300ms' } })),
    );
    expect(new Set(burst.map((h) => h.workflowId)).size).toBe(1);
    const out = await burst[0].result({ timeout: '10s' });
    await new Promise((r) => setTimeout(r, 300)); // a second start would have come by now (timers every 100 ms)
    expect(runsOf('b')).toEqual([{ id: burst[0].workflowId, input: out }]);
  });

  it('a fire that read the row before a call pushed it commits nothing, and the start has the later input', async () => {
    runs.length = 0;
    const e = await env.pool.create(fast, (x) => x.register('echo', Echo));
    await e.bootstrap();
    const h = await e.start('echo', 'early', { debounce: { key: 'race', delay: '100ms' } });
    // A call that locked the row while its window was open commits after the fire's read: the
    // fire holds a stale version (and input). Done here by the call's own statement's effect.
    const debounce = e.store.debounce;
    const read = debounce.forFire.bind(debounce);
    let raced = false;
    debounce.forFire = async (id: string) => {
      const r = await read(id);
      if (!raced) {
        raced = true;
        await env.tdb.query(
          `WITH w AS (UPDATE weft.weft_workflows SET input = '"late"', version = version + 1,
                        start_at = clock_timestamp() + interval '300 milliseconds' WHERE id = $1 RETURNING id, start_at)
           UPDATE weft.weft_timers t SET fire_at = w.start_at FROM w WHERE t.workflow_id = w.id AND t.kind = 'delayed-start'`,
          [id],
        );
      }
      return r;
    };
    expect(await h.result({ timeout: '10s' })).toBe('late');
    expect(raced).toBe(true);
    expect(runs.filter((r) => ['early', 'late'].includes(r.input))).toEqual([{ id: h.workflowId, input: 'late' }]);
  });

  it('a call that meets a closed window not yet fired detaches it (it starts as it is) and opens a new one', async () => {
    runs.length = 0;
    const e = await env.pool.create(fast, (x) => x.register('echo', Echo));
    await e.bootstrap();
    const first = await e.start('echo', 'd-first', { debounce: { key: 'closed', delay: '1h' } });
    // Its start is due by the database clock, its timer not yet: the window has closed, unfired.
    await env.tdb.query(`UPDATE weft.weft_workflows SET start_at = clock_timestamp() - interval '1 second' WHERE id = $1`, [
      first.workflowId,
    ]);
    const second = await e.start('echo', 'd-second', { debounce: { key: 'closed', delay: '1h' } });
    expect(second.workflowId).not.toBe(first.workflowId);
    const [old] = await env.tdb.query<{ debounce_key: string | null; version: number; input: unknown }>(
      `SELECT debounce_key, version, input FROM weft.weft_workflows WHERE id = $1`,
      [first.workflowId],
    );
    expect(old).toEqual({ debounce_key: null, version: 1, input: 'd-first' });
    // The new window is the key's: a third call pushes it.
    const third = await e.start('echo', 'd-third', { debounce: { key: 'closed', delay: '50ms' } });
    expect(third.workflowId).toBe(second.workflowId);
    await env.tdb.query(`UPDATE weft.weft_timers SET fire_at = clock_timestamp() WHERE workflow_id = $1`, [first.workflowId]);
    expect(await first.result({ timeout: '10s' })).toBe('d-first');
    expect(await third.result({ timeout: '10s' })).toBe('d-third');
    expect(
      runsOf('d-')
        .map((r) => r.input)
        .sort(),
    ).toEqual(['d-first', 'd-third']);
  });

  it('refuses bad debounce options before anything is written', async () => {
    const e = await env.pool.create({}, (x) => x.register('echo', Echo));
    await e.bootstrap();
    const count = async () => (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.weft_workflows`))[0].n;
    const before = await count();
    for (const [opts, what] of [
      [{ debounce: 'k' }, 'must be an object'],
      [{ debounce: { key: '', delay: '1s' } }, 'must not be empty'],
      [{ debounce: { key: 'k' } }, 'debounce.delay'],
      [{ debounce: { key: 'k', delay: '0ms' } }, 'from 1 ms'],
      [{ debounce: { key: 'k', delay: '2s', maxDelay: '1s' } }, 'debounce.maxDelay'],
      [{ debounce: { key: 'k', delay: '40d' } }, '30 days'],
      [{ debounce: { key: 'k', delay: '1s', wait: 1 } }, 'is not an option'],
      [{ debounce: { key: 'k', delay: '1s' }, workflowId: 'x' }, 'workflowId'],
      [{ debounce: { key: 'k', delay: '1s' }, startAfter: '1s' }, 'startAfter'],
      [{ debounce: { key: 'k', delay: '1s' }, singleton: 'k' }, 'singleton'],
    ] as const) {
      const err = await codeOf(e.start('echo', 'x', opts as never));
      expect(err?.code, what).toMatch(/WEFT_INVALID_(ARGUMENT|DURATION)/);
      expect(err?.message).toContain(what);
    }
    expect(await count()).toBe(before);
  });
});
