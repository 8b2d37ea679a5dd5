import { useTestEngines } from '../../../../test/support/engine.js';
import type { Duration } from '../common/duration.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

let leaked: WorkflowContext | undefined;

class Echo {
  async run(ctx: WorkflowContext, input: unknown) {
    leaked = ctx;
    return input;
  }
}

class BadStep {
  async run(ctx: WorkflowContext, input: { kind: string }) {
    try {
      await ctx.step('bad', () => (input.kind === 'bigint' ? { n: BigInt(1) } : { f: () => 1 }), {
        retry: { maxAttempts: 2, initialInterval: 1 },
      });
      return 'recorded';
    } catch (err) {
      return (err as { code?: string }).code;
    }
  }
}

class BadSleep {
  async run(ctx: WorkflowContext, input: { d: string | number }) {
    try {
      await ctx.sleep(input.d as Duration); // deliberately unchecked: the engine refuses bad ones
      return 'slept';
    } catch (err) {
      return (err as { code?: string }).code;
    }
  }
}

describe('bad input is refused with a typed error and nothing written', () => {
  const env = useTestEngines({ disposeAfterEach: false });
  let engine: WeftEngine;
  const count = async () => (await env.tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_workflows'))[0].n;

  beforeAll(async () => {
    engine = await env.pool.create({ maxPayloadBytes: 1000 }, (e) =>
      e.register('echo', Echo).register('bad-step', BadStep).register('bad-sleep', BadSleep),
    );
    await engine.bootstrap();
  });

  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;

  it.each([
    ['unknown workflow type', () => engine.start('nope', {}), 'WEFT_WORKFLOW_TYPE_NOT_REGISTERED'],
    ['BigInt input', () => engine.start('echo', { n: BigInt(5) }), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['function input', () => engine.start('echo', { f: () => 1 }), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['cyclic input', () => engine.start('echo', cyclic), 'WEFT_PAYLOAD_NOT_SERIALIZABLE'],
    ['oversized input', () => engine.start('echo', { s: 'x'.repeat(2000) }), 'WEFT_PAYLOAD_TOO_LARGE'],
    ['empty id', () => engine.start('echo', {}, { workflowId: '' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['long id', () => engine.start('echo', {}, { workflowId: 'x'.repeat(256) }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['control characters in id', () => engine.start('echo', {}, { workflowId: 'a\nb' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['a C1 control (U+0085) in id', () => engine.start('echo', {}, { workflowId: 'a\u0085b' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['a C1 control (U+009B, a terminal CSI) in id', () => engine.start('echo', {}, { workflowId: '\u009b2J' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['a lone surrogate in id', () => engine.start('echo', {}, { workflowId: 'a\ud800' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['id "."', () => engine.start('echo', {}, { workflowId: '.' }), 'WEFT_INVALID_WORKFLOW_ID'],
    ['id ".."', () => engine.start('echo', {}, { workflowId: '..' }), 'WEFT_INVALID_WORKFLOW_ID'],
    [
      'id "." for signalWithStart',
      () => engine.signalWithStart('echo', {}, { name: 's' }, { workflowId: '.' }),
      'WEFT_INVALID_WORKFLOW_ID',
    ],
    ['negative startAfter', () => engine.start('echo', {}, { startAfter: -5 }), 'WEFT_INVALID_DURATION'],
    ['unparsable executionTimeout', () => engine.start('echo', {}, { executionTimeout: 'soon' as Duration }), 'WEFT_INVALID_DURATION'],
    ['unknown id policy', () => engine.start('echo', {}, { idPolicy: 'whatever' as never }), 'WEFT_INVALID_ARGUMENT'],
    ['misspelt start option', () => engine.start('echo', {}, { timeout: '1s' } as never), 'WEFT_INVALID_ARGUMENT'],
  ])('%s', async (_what, call, code) => {
    const before = await count();
    await expect(call()).rejects.toMatchObject({ code });
    expect(await count()).toBe(before);
  });

  it('reports a duplicate id under reject-duplicate without writing', async () => {
    await engine.start('echo', 1, { workflowId: 'dup' });
    const before = await count();
    await expect(engine.start('echo', 2, { workflowId: 'dup', idPolicy: 'reject-duplicate' })).rejects.toMatchObject({
      code: 'WEFT_WORKFLOW_ALREADY_STARTED',
    });
    expect(await count()).toBe(before);
    expect((await engine.describe('dup')).input).toBe(1);
  });

  it.each(['bigint', 'function'])('a step result holding a %s fails the step with the typed error, never its commit', async (kind) => {
    const h = await engine.start('bad-step', { kind });
    await expect(h.result({ timeout: '5s' })).resolves.toBe('WEFT_STEP_FAILED');
    const { history } = await h.describe();
    expect(history).toEqual([
      expect.objectContaining({ status: 'failed', error: expect.objectContaining({ name: 'PayloadNotSerializableError' }) }),
    ]);
  });

  it.each([-1, 'ten seconds'])('ctx.sleep(%p) is refused', async (d) => {
    const h = await engine.start('bad-sleep', { d });
    await expect(h.result({ timeout: '5s' })).resolves.toBe('WEFT_INVALID_DURATION');
  });

  it('ctx methods called outside run() are refused', async () => {
    await engine.start('echo', 'x').then((h) => h.result({ timeout: '5s' }));
    expect(leaked).toBeDefined();
    await expect(leaked!.step('late', () => 1)).rejects.toMatchObject({ code: 'WEFT_OUTSIDE_WORKFLOW' });
    expect(() => leaked!.now()).toThrow(expect.objectContaining({ code: 'WEFT_OUTSIDE_WORKFLOW' }));
  });

  it('unknown workflow ids are a typed error', async () => {
    await expect(engine.describe('missing')).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    await expect(engine.result('missing')).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    await expect(engine.cancel('missing')).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
  });
});
