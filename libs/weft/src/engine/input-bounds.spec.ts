import { useTestEngines } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { MAX_DURATION_MS } from '../common/duration.js';
import type { WeftEngine } from './engine.js';
import { MAX_JSON_DEPTH } from './validation.js';

// docs/api.md lists the bounds: bad input gets a typed error before anything is written.

const nested = (levels: number): unknown => {
  let v: unknown = 0;
  for (let i = 0; i < levels; i++) v = [v];
  return v;
};
const longName = 'n'.repeat(256);
const HUGE = 1e16; // PostgreSQL 22008 (timestamp out of range) as a delay

/** How often each workflow's first step body ran: a bad call after it must not re-run it. */
const firstRuns = new Map<string, number>();

type BadCall = (ctx: WorkflowContext) => Promise<unknown>;
const BAD_CALLS: Record<string, BadCall> = {
  'sleep 1e16': (ctx) => ctx.sleep(HUGE),
  'waitForSignal timeout 1e16': (ctx) => ctx.waitForSignal('go', { timeout: HUGE }),
  'condition timeout 1e16': (ctx) => ctx.condition(() => false, { timeout: HUGE }),
  'sleep past 100 years': (ctx) => ctx.sleep('36501d'),
  'step timeout 1e16': (ctx) => ctx.step('second', () => 1, { timeout: HUGE }),
  'step retry interval 1e16': (ctx) => ctx.step('second', () => 1, { retry: { initialInterval: HUGE } }),
  'step name of 256 characters': (ctx) => ctx.step(longName, () => 1),
  'waitForSignal name of 256 characters': (ctx) => ctx.waitForSignal(longName, { timeout: '1h' }),
  'startChild type of 256 characters': (ctx) => ctx.startChild(longName, {}),
  'startChild input 5,000 levels deep': (ctx) => ctx.startChild('echo', nested(5_000)),
};

class BadCallAfterAStep {
  async run(ctx: WorkflowContext, input: { call: string }) {
    await ctx.step('first', () => firstRuns.set(ctx.workflowId, (firstRuns.get(ctx.workflowId) ?? 0) + 1).size);
    try {
      await BAD_CALLS[input.call](ctx);
      return 'accepted';
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  }
}

class DeepResult {
  async run(ctx: WorkflowContext) {
    return ctx
      .step('deep', () => nested(5_000), { retry: { maxAttempts: 2, initialInterval: 1 } })
      .catch((err: { code?: string }) => err.code);
  }
}

class LongStepTimeout {
  async run(ctx: WorkflowContext) {
    // 30 days is past setTimeout's 2^31-1 ms: it used to fire after 1 ms and fail the step.
    return ctx.step('slowish', () => new Promise((r) => setTimeout(() => r('done'), 30)), { timeout: '30d' });
  }
}

class Echo {
  async run(_ctx: WorkflowContext, input: unknown) {
    return input;
  }
}

class WaitsForGo {
  async run(ctx: WorkflowContext) {
    const child = await ctx.executeChild('echo', 'from child');
    return { child, go: await ctx.waitForSignal('go', { timeout: '1m' }) };
  }
}

describe('bounded inputs: a typed error at the call, nothing written, never a loop', () => {
  const env = useTestEngines({ disposeAfterEach: false });
  let engine: WeftEngine;
  const count = async (table: string) => (await env.tdb.query<{ n: number }>(`SELECT count(*)::int AS n FROM weft.${table}`))[0].n;

  beforeAll(async () => {
    engine = await env.pool.create({}, (e) =>
      e
        .register('bad-call', BadCallAfterAStep)
        .register('long-step-timeout', LongStepTimeout)
        .register('echo', Echo)
        .register('deep-result', DeepResult),
    );
    await engine.bootstrap();
  });

  it.each(Object.keys(BAD_CALLS).map((call) => [call]))('inside a workflow: %s', async (call) => {
    const expected = /name|type/.test(call)
      ? 'WEFT_INVALID_ARGUMENT'
      : /deep/.test(call)
        ? 'WEFT_PAYLOAD_NOT_SERIALIZABLE'
        : 'WEFT_INVALID_DURATION';
    const h = await engine.start('bad-call', { call });
    await expect(h.result({ timeout: '5s' })).resolves.toBe(expected);
    expect(firstRuns.get(h.workflowId)).toBe(1);
    const { history } = await h.describe();
    expect(history.map((op) => op.name)).toEqual(['first']);
    expect(await env.tdb.query('SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1', [h.workflowId])).toEqual([]);
  });

  it('a step result 5,000 levels deep fails the step (each attempt), recorded with the typed error', async () => {
    const h = await engine.start('deep-result', null);
    await expect(h.result({ timeout: '5s' })).resolves.toBe('WEFT_STEP_FAILED');
    const [op] = (await h.describe()).history;
    expect(op).toMatchObject({ name: 'deep', status: 'failed', attempts: 2, error: { name: 'PayloadNotSerializableError' } });
    expect(op.error).toMatchObject({ message: expect.stringContaining(`more than ${MAX_JSON_DEPTH} levels`) });
  });

  it('a step timeout longer than setTimeout can hold works', async () => {
    await expect((await engine.start('long-step-timeout', null)).result({ timeout: '5s' })).resolves.toBe('done');
  });

  const farFuture = () => new Date(Date.now() + MAX_DURATION_MS + 86_400_000);
  it.each([
    ['startAfter 1e16', () => engine.start('echo', {}, { startAfter: HUGE }), 'WEFT_INVALID_DURATION'],
    ['startAfter past 100 years', () => engine.start('echo', {}, { startAfter: '36501d' }), 'WEFT_INVALID_DURATION'],
    ['executionTimeout 1e16', () => engine.start('echo', {}, { executionTimeout: HUGE }), 'WEFT_INVALID_DURATION'],
    ['startAt past 100 years', () => engine.start('echo', {}, { startAt: farFuture() }), 'WEFT_INVALID_ARGUMENT'],
    ['input 5,000 levels deep', () => engine.start('echo', nested(5_000)), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    [`input ${MAX_JSON_DEPTH + 1} levels deep`, () => engine.start('echo', nested(MAX_JSON_DEPTH + 1)), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    [
      'signalWithStart with a signal name of 256 characters',
      () => engine.signalWithStart('echo', {}, { name: longName }),
      'WEFT_INVALID_ARGUMENT',
    ],
    [
      'signalWithStart with a payload 5,000 levels deep',
      () => engine.signalWithStart('echo', {}, { name: 's', payload: nested(5_000) }),
      'WEFT_PAYLOAD_NOT_SERIALIZABLE',
    ],
    ['a signal payload 5,000 levels deep', () => engine.signal('any', 's', nested(5_000)), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['update args 5,000 levels deep', () => engine.update('any', 'u', nested(5_000)), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['query args 5,000 levels deep', () => engine.query('any', 'q', nested(5_000)), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['an update timeout of 1e16', () => engine.update('any', 'u', null, { timeout: HUGE }), 'WEFT_INVALID_DURATION'],
    ['a result timeout of 1e16', () => engine.result('any', { timeout: HUGE }), 'WEFT_INVALID_DURATION'],
    ['a list type filter with a NUL', () => engine.list({ type: 'a\u0000b' }), 'WEFT_INVALID_ARGUMENT'],
  ])('from the API: %s', async (_what, call, code) => {
    const before = [await count('weft_workflows'), await count('weft_messages'), await count('weft_timers')];
    await expect(call()).rejects.toMatchObject({ code });
    expect([await count('weft_workflows'), await count('weft_messages'), await count('weft_timers')]).toEqual(before);
  });

  it(`accepts input ${MAX_JSON_DEPTH} levels deep and exactly 100 years`, async () => {
    const h = await engine.start('echo', nested(MAX_JSON_DEPTH));
    await expect(h.result({ timeout: '5s' })).resolves.toEqual(nested(MAX_JSON_DEPTH));
    const later = await engine.start('echo', {}, { startAfter: '36500d', executionTimeout: MAX_DURATION_MS });
    expect((await later.describe()).status).toBe('pending');
  });

  it('refuses a workflow type name of 256 characters at registration', () => {
    expect(() => engine.register(longName, Echo)).toThrow(expect.objectContaining({ code: 'WEFT_INVALID_ARGUMENT' }));
  });

  it('refuses an engineId of 256 characters at construction, naming the option', async () => {
    await expect(env.pool.create({ engineId: longName })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
      option: 'engineId',
    });
  });
});

describe('schema names: every derived identifier fits PostgreSQL 63 bytes', () => {
  const env = useTestEngines();

  it.each([59, 63])('refuses a schema of %p characters at construction, naming the option', async (length) => {
    await expect(env.pool.create({ schema: 's'.repeat(length) })).rejects.toMatchObject({
      code: 'WEFT_INVALID_CONFIGURATION',
      option: 'schema',
    });
  });

  it('a schema of 58 characters carries signals and child notices (NOTIFY channel of 63 bytes)', async () => {
    const engine = await env.pool.create({ schema: 's'.repeat(58) }, (e) => e.register('waits', WaitsForGo).register('echo', Echo));
    await engine.bootstrap();
    const h = await engine.start('waits', null);
    await engine.signal(h.workflowId, 'go', 'now');
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ child: 'from child', go: 'now' });
  });
});
