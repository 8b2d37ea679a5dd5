import { useTestEngines } from '../../../../test/support/engine.js';
import { EngineDisposedError, InvalidArgumentError, WorkflowNotRunningError } from '../common/errors.js';
import type { ListFilter, WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// The public methods at the edges: after dispose() every one rejects (never throws) with
// EngineDisposedError; resume() of a running workflow says what it needs; list() refuses a
// filter it cannot apply instead of answering an empty page.

class WaitsForGo {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
    return 'done';
  }
}

const register = (e: WeftEngine) => e.register('waits', WaitsForGo);

/** Calls `call`; a synchronous throw fails the test, the returned promise is what it rejected with. */
async function rejectionOf(call: () => Promise<unknown>): Promise<unknown> {
  let p: Promise<unknown> | undefined;
  expect(() => {
    p = call();
  }).not.toThrow();
  return p!.then(
    () => 'resolved',
    (e: unknown) => e,
  );
}

describe('WeftEngine public methods at the edges', () => {
  const env = useTestEngines();

  it('after dispose(), every public method rejects with EngineDisposedError', async () => {
    const engine = await env.pool.create({}, register);
    await engine.bootstrap();
    await engine.start('waits', {}, { workflowId: 'w-1' });
    await engine.dispose();
    const calls: Record<string, () => Promise<unknown>> = {
      start: () => engine.start('waits', {}),
      signalWithStart: () => engine.signalWithStart('waits', {}, { name: 'go' }),
      signal: () => engine.signal('w-1', 'go'),
      update: () => engine.update('w-1', 'u'),
      query: () => engine.query('w-1', 'q'),
      result: () => engine.result('w-1'),
      describe: () => engine.describe('w-1'),
      list: () => engine.list(),
      cancel: () => engine.cancel('w-1'),
      suspend: () => engine.suspend('w-1'),
      resume: () => engine.resume('w-1'),
      purge: () => engine.purge('w-1'),
      recoverAll: () => engine.recoverAll(),
      runMaintenance: () => engine.runMaintenance(),
      bootstrap: () => engine.bootstrap(),
      'handle.result': () => engine.handle('w-1').result(),
      'handle.status': () => engine.handle('w-1').status(),
      'handle.signal': () => engine.handle('w-1').signal('go'),
      'schedules.describe': () => engine.schedules.describe('s-1'),
      'schedules.list': () => engine.schedules.list(),
      'schedules.create': () => engine.schedules.create({ id: 's-1', workflowType: 'waits', every: '1h' }),
    };
    const outcomes: Record<string, unknown> = {};
    for (const [name, call] of Object.entries(calls)) {
      const err = await rejectionOf(call);
      outcomes[name] = err instanceof EngineDisposedError ? 'EngineDisposedError' : err;
    }
    expect(outcomes).toEqual(Object.fromEntries(Object.keys(calls).map((k) => [k, 'EngineDisposedError'])));
  });

  it('a result() waiting when the engine is disposed rejects with EngineDisposedError', async () => {
    const engine = await env.pool.create({}, register);
    await engine.bootstrap();
    await engine.start('waits', {}, { workflowId: 'w-2' });
    const waiting = engine.result('w-2').then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await engine.dispose();
    expect(await waiting).toBeInstanceOf(EngineDisposedError);
  });

  it('resume() of a running workflow says that it needs a suspended one', async () => {
    const engine = await env.pool.create({}, register);
    await engine.bootstrap();
    await engine.start('waits', {}, { workflowId: 'w-3' });
    const err = await rejectionOf(() => engine.resume('w-3'));
    expect(err).toBeInstanceOf(WorkflowNotRunningError);
    expect((err as Error).message).toBe('Workflow "w-3" is running; this operation needs it to be suspended.');
  });

  it('list() refuses an unknown status, an empty status list and an unknown filter field, naming what is valid', async () => {
    const engine = await env.pool.create({}, register);
    await engine.bootstrap();
    await engine.start('waits', {}, { workflowId: 'w-4' });
    expect((await engine.list({ status: ['running'], idPrefix: 'w-4' })).items.map((i) => i.workflowId)).toEqual(['w-4']);

    const typo = await rejectionOf(() => engine.list({ status: ['runing'] } as unknown as ListFilter));
    expect(typo).toBeInstanceOf(InvalidArgumentError);
    expect((typo as Error).message).toContain('"runing"');
    expect((typo as Error).message).toContain('pending, enqueued, running, suspended, completed, failed, cancelled, timed_out');
    expect(await rejectionOf(() => engine.list({ status: 'done' } as unknown as ListFilter))).toBeInstanceOf(InvalidArgumentError);
    expect(await rejectionOf(() => engine.list({ status: [] }))).toBeInstanceOf(InvalidArgumentError);
    const unknown = await rejectionOf(() => engine.list({ statuses: ['running'] } as unknown as ListFilter));
    expect(unknown).toBeInstanceOf(InvalidArgumentError);
    expect((unknown as Error).message).toContain('status, type, idPrefix, attributes, order, include, limit, cursor');
  });
});
