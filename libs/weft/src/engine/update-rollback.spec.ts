import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { UpdateFailedError } from '../common/errors.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// A synchronous update handler the caller is told failed never takes effect: one that throws is
// rolled back (the run is rebuilt from its history, where a failed update changes nothing). An
// async handler, or one that returns a promise, is followed to its end as in Temporal: its ctx
// calls are recorded, and its result answers the caller (async-updates.spec.ts).

class Counter {
  value = 'initial';
  private ctx!: WorkflowContext;

  async run(ctx: WorkflowContext) {
    this.ctx = ctx;
    await ctx.waitForSignal('finish');
    return this.value;
  }

  async asyncSet(v: string) {
    this.value = v;
    await this.ctx.step('from-async-handler', () => v);
    return v;
  }

  promiseSet(v: string) {
    this.value = v;
    return Promise.resolve().then(() => this.ctx.step('from-promise-handler', () => v));
  }

  throwSet(v: string) {
    this.value = v;
    throw new RangeError(`refusing ${v}`);
  }

  set(v: string) {
    this.value = v;
    return v;
  }

  read() {
    return this.value;
  }
}

const counterDef: WorkflowDefinition = {
  name: 'counter',
  factory: () => new Counter() as never,
  updateHandlers: { 'async-set': 'asyncSet', 'promise-set': 'promiseSet', 'throw-set': 'throwSet', set: 'set' },
  queryHandlers: { value: 'read' },
};

async function failure(p: Promise<unknown>): Promise<UpdateFailedError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UpdateFailedError);
  return err as UpdateFailedError;
}

describe('an update that failed', () => {
  const env = useTestEngines();

  it('a throwing synchronous handler leaves no state change, live and after a replay on another engine', async () => {
    const register = (e: WeftEngine) => e.register(counterDef);
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'counter-1';
    await a.start('counter', {}, { workflowId: id });

    // Async, or a promise returned: applied, their steps recorded (and replayed on another engine).
    expect(await a.update(id, 'async-set', 'async', { timeout: '10s' })).toBe('async');
    expect(await a.query(id, 'value')).toBe('async');
    expect(await a.update(id, 'promise-set', 'promise', { timeout: '10s' })).toBe('promise');
    expect(await a.query(id, 'value')).toBe('promise');

    const thrown = await failure(a.update(id, 'throw-set', 'thrown'));
    expect(thrown.cause).toMatchObject({ name: 'RangeError', message: 'refusing thrown' });
    expect(await a.query(id, 'value')).toBe('promise');

    // A good update after them applies (the rebuilt run takes messages again).
    expect(await a.update(id, 'set', 'ok', { timeout: '10s' })).toBe('ok');
    expect(await a.query(id, 'value')).toBe('ok');
    await a.dispose();

    const b = await env.pool.create({}, register);
    await b.bootstrap();
    expect(await b.query(id, 'value')).toBe('ok');
    await b.signal(id, 'finish');
    expect(await b.result(id, { timeout: '10s' })).toBe('ok');
    const history = (await b.describe(id)).history;
    expect(history.filter((op) => op.kind === 'step').map((op) => op.name)).toEqual(['from-async-handler', 'from-promise-handler']);
    await waitFor(async () => (await b.describe(id)).status === 'completed', 'the workflow to complete');
  });
});
