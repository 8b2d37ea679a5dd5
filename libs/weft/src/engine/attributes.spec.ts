import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { InvalidArgumentError } from '../common/errors.js';
import type { WorkflowContext } from '../common/types.js';
import { MAX_ATTRIBUTE_KEYS, mergeAttributes } from './attributes.js';
import type { WeftEngine } from './engine.js';

/** Sets, overwrites and removes attributes around a step, then waits for 'go'. */
class Tagged {
  async run(ctx: WorkflowContext) {
    ctx.setAttributes({ customer: 'c-1', tier: 1 });
    await ctx.step('work', () => 1);
    ctx.setAttributes({ tier: 2, vip: true, customer: null });
    await ctx.waitForSignal('go');
    return 'done';
  }
}

/** Every refused call writes nothing: the codes it got, then one call that passes. */
class Refused {
  async run(ctx: WorkflowContext) {
    const codes: string[] = [];
    const attempt = (attrs: Record<string, never>) => {
      try {
        ctx.setAttributes(attrs);
      } catch (err) {
        codes.push(err instanceof InvalidArgumentError ? err.code : String(err));
      }
    };
    attempt({ '1bad': 1 } as never);
    attempt({ s: 'x'.repeat(257) } as never);
    attempt({ o: { nested: true } } as never);
    attempt({ n: Number.NaN } as never);
    attempt({} as never);
    const many = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`k${i}`, i]));
    ctx.setAttributes(many);
    attempt({ a: 1, b: 2, c: 3 } as never); // 33 keys after the merge
    ctx.setAttributes({ k0: null, a: 'ok' }); // 30 keys
    await ctx.step('after', () => codes);
    return codes;
  }
}

/** Run 1 sets one attribute and continues; run 2 starts with none and sets its own. */
class Chain {
  async run(ctx: WorkflowContext, input: { second?: boolean }) {
    if (input.second) {
      ctx.setAttributes({ run: 2 });
      return ctx.step('second', () => 'ok');
    }
    ctx.setAttributes({ run: 1, first: 'yes' });
    await ctx.step('first', () => 'ok');
    return ctx.continueAsNew({ second: true });
  }
}

/** Sets what it is given. */
class Setter {
  async run(ctx: WorkflowContext, input: Record<string, number>) {
    ctx.setAttributes(input);
    return ctx.step('set', () => 1);
  }
}

describe('ctx.setAttributes', () => {
  it('merges, a null removes its key, and the bounds refuse before anything is merged', () => {
    expect(mergeAttributes({ a: 1 }, { b: 'x', a: null })).toEqual({ b: 'x' });
    expect(() => mergeAttributes({}, { 'has space': 1 })).toThrow(InvalidArgumentError);
    expect(() => mergeAttributes({}, { ['k'.repeat(65)]: 1 })).toThrow(InvalidArgumentError);
    expect(() => mergeAttributes({}, { s: '\u0000' })).toThrow(InvalidArgumentError);
    expect(() => mergeAttributes({}, [] as never)).toThrow(InvalidArgumentError);
    const full = Object.fromEntries(Array.from({ length: MAX_ATTRIBUTE_KEYS }, (_, i) => [`k${i}`, i]));
    expect(Object.keys(mergeAttributes({}, full))).toHaveLength(MAX_ATTRIBUTE_KEYS);
    expect(() => mergeAttributes(full, { one: 'more' })).toThrow(/at most 32/);
  });
});

describe('ctx.setAttributes (real PostgreSQL)', () => {
  const env = useTestEngines();

  const engine = async () => {
    const e = await env.pool.create({}, (x: WeftEngine) =>
      x.register('tagged', Tagged).register('refused', Refused).register('chain', Chain).register('setter', Setter),
    );
    await e.bootstrap();
    return e;
  };

  it('are recorded as operations, stored on the workflow and shown by describe; a replay does not write them again', async () => {
    const a = await engine();
    const h = await a.start('tagged', {}, { workflowId: 'tagged-1' });
    await waitFor(async () => (await a.describe(h.workflowId)).attributes.vip === true, 'attributes stored');
    expect((await a.describe(h.workflowId)).attributes).toEqual({ tier: 2, vip: true });
    await a.dispose();
    // Changed behind the engine's back: a replay that wrote its recorded attributes again would merge them back in.
    await env.tdb.query(`UPDATE weft.weft_workflows SET attributes = '{"marker": 1}' WHERE id = $1`, [h.workflowId]);
    const b = await engine();
    await waitFor(() => b.describe(h.workflowId).then((d) => d.history.some((o) => o.kind === 'step')), 'recovered');
    await b.signal(h.workflowId, 'go');
    expect(await b.result(h.workflowId, { timeout: 20_000 })).toBe('done');
    const d = await b.describe(h.workflowId);
    expect(d.attributes).toEqual({ marker: 1 });
    expect(d.history.filter((o) => o.kind === 'setAttributes').map((o) => o.result)).toEqual([
      { customer: 'c-1', tier: 1 },
      { tier: 2, vip: true, customer: null },
    ]);
  });

  it('out of bounds: refused with a typed input error and nothing recorded or stored', async () => {
    const e = await engine();
    const h = await e.start('refused', {}, { workflowId: 'refused-1' });
    expect(await e.result(h.workflowId, { timeout: 20_000 })).toEqual(Array(6).fill('WEFT_INVALID_ARGUMENT'));
    const d = await e.describe(h.workflowId);
    expect(d.history.map((o) => o.kind)).toEqual(['setAttributes', 'setAttributes', 'step']);
    expect(Object.keys(d.attributes)).toHaveLength(30);
    expect(d.attributes.a).toBe('ok');
    expect(d.attributes.k0).toBeUndefined();
  });

  it('a restarted workflow (start-new-if-terminal) starts with none', async () => {
    const e = await engine();
    await e.start('setter', { a: 1 }, { workflowId: 'restart-1' });
    await e.result('restart-1', { timeout: 20_000 });
    await e.start('setter', { b: 2 }, { workflowId: 'restart-1', idPolicy: 'start-new-if-terminal' });
    await waitFor(
      async () => (await e.describe('restart-1')).status === 'completed' && (await e.describe('restart-1')).runNumber === 2,
      'second run',
    );
    expect((await e.describe('restart-1')).attributes).toEqual({ b: 2 });
  });

  it('a continued run starts with none: the switch clears them', async () => {
    const e = await engine();
    const h = await e.start('chain', {}, { workflowId: 'chain-1' });
    expect(await e.result(h.workflowId, { timeout: 20_000 })).toBe('ok');
    const d = await e.describe(h.workflowId);
    expect(d.runNumber).toBe(2);
    expect(d.attributes).toEqual({ run: 2 });
  });
});
