import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { PAYMENT_FLOW_CODE } from '../../../../test/fixtures/versioned-workflows.js';
import type { WorkflowContext, WorkflowDescription } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import { WorkflowReplayer } from './replayer.js';

type Code = keyof typeof PAYMENT_FLOW_CODE;

class Looper {
  async run(ctx: WorkflowContext, input: { n: number }) {
    if (input.n >= 2) return input.n;
    return ctx.continueAsNew({ n: input.n + 1 });
  }
}

describe('versioning: patch markers, the three phases, the replayer, @Workflow version (real PostgreSQL)', () => {
  const env = useTestEngines();
  const engineWith = async (code: Code, extra?: (e: WeftEngine) => void) => {
    const e = await env.pool.create({}, (x) => {
      x.register({ name: 'payment-flow', version: code, factory: () => new PAYMENT_FLOW_CODE[code]() });
      extra?.(x);
    });
    await e.bootstrap();
    return e;
  };
  /** Runs `n` executions on `code` to completion; their recorded histories as describe gives them. */
  const finishedOn = async (code: Code, n = 3): Promise<WorkflowDescription[]> => {
    const e = await engineWith(code);
    const handles = await Promise.all(Array.from({ length: n }, () => e.start('payment-flow', {})));
    await waitFor(
      async () => (await Promise.all(handles.map((h) => h.describe()))).every((d) => d.history.length >= 2),
      'parked at the signal',
    );
    await Promise.all(handles.map((h) => h.signal('ship')));
    await Promise.all(handles.map((h) => h.result({ timeout: '10s' })));
    const out = await Promise.all(handles.map((h) => h.describe()));
    await env.pool.disposeAll();
    return out;
  };
  const replay = (code: Code, runs: WorkflowDescription[]) =>
    new WorkflowReplayer([['payment-flow', PAYMENT_FLOW_CODE[code]]]).replayAll(runs);
  const failures = async (code: Code, runs: WorkflowDescription[]) => (await replay(code, runs)).filter((r) => !r.ok);

  it('a live run records the marker and takes the new path; the version is recorded and listed', async () => {
    const [d] = await finishedOn('v2', 1);
    expect(d.output).toBe('wallet');
    expect(d.workflowVersion).toBe('v2');
    expect(d.history.map((o) => `${o.seq}:${o.kind}:${o.name}`)).toEqual([
      '0:step:reserve',
      '1:patch:wallet',
      '2:step:charge-wallet',
      '3:waitForSignal:ship',
      '4:step:ship',
    ]);
    const e = await engineWith('v2');
    expect((await e.list({ type: 'payment-flow' })).items.map((i) => i.workflowVersion)).toEqual(['v2']);
  });

  it('phase 1 (patched): v1 histories replay on the old path, v2 histories on the new', async () => {
    const v1 = await finishedOn('v1');
    const v2 = await finishedOn('v2');
    expect(await failures('v2', [...v1, ...v2])).toEqual([]);
    // The old code cannot replay the new runs: the marker is where it calls charge-card.
    const back = await failures('v1', v2);
    expect(back).toHaveLength(3);
    expect(back[0]).toMatchObject({ ok: false, error: { code: 'WEFT_NON_DETERMINISM', seq: 1 } });
  });

  it('phase 2 (deprecatePatch): replays v2 histories, records a deprecated marker; v1 histories no longer replay', async () => {
    const v1 = await finishedOn('v1', 1);
    const v2 = await finishedOn('v2', 2);
    const v2d = await finishedOn('v2d', 2);
    expect(v2d[0].history[1]).toMatchObject({ kind: 'patch', name: 'wallet', result: { deprecated: true } });
    expect(await failures('v2d', [...v2, ...v2d])).toEqual([]);
    expect(await failures('v2d', v1)).toHaveLength(1);
  });

  it('phase 3 (removed): deprecated markers are passed over; a marker recorded by patched() is a named non-determinism', async () => {
    const v2 = await finishedOn('v2', 1);
    const v2d = await finishedOn('v2d', 2);
    expect(await failures('v3', v2d)).toEqual([]);
    const [early] = await failures('v3', v2);
    expect(early).toMatchObject({ ok: false, error: { code: 'WEFT_NON_DETERMINISM', recorded: { kind: 'patch', name: 'wallet' } } });
    // And a v2d run parked under v3 code finishes there (the engine skips the marker as the replayer does).
    const e2d = await engineWith('v2d');
    const h = await e2d.start('payment-flow', {});
    await waitFor(async () => (await h.describe()).history.length >= 3, 'parked at the signal');
    await env.pool.disposeAll();
    const e3 = await engineWith('v3');
    await e3.signal(h.workflowId, 'ship');
    await expect(e3.result(h.workflowId, { timeout: '10s' })).resolves.toBe('wallet');
  });

  it('a run that diverges is reported, not thrown; an unknown type or a bad history is bad input', async () => {
    const [d] = await finishedOn('v1', 1);
    const r = new WorkflowReplayer([['payment-flow', PAYMENT_FLOW_CODE.v3]]);
    await expect(r.replay(d)).resolves.toMatchObject({ ok: false, workflowId: d.workflowId });
    await expect(r.replay({ ...d, type: 'other' })).rejects.toMatchObject({ code: 'WEFT_INVALID_ARGUMENT' });
    await expect(r.replay({ ...d, history: 'x' as never })).rejects.toMatchObject({ code: 'WEFT_INVALID_ARGUMENT' });
  });

  it('WorkflowReplayer.forEngine replays with the engine’s own types', async () => {
    const v2 = await finishedOn('v2', 1);
    const e = await engineWith('v2');
    expect(await WorkflowReplayer.forEngine(e).replayAll(v2)).toEqual([{ workflowId: v2[0].workflowId, type: 'payment-flow', ok: true }]);
  });

  it('continueAsNew records the version of the code that continues; a bad version is refused at registration', async () => {
    const e = await engineWith('v2', (x) => x.register({ name: 'looper', version: '7', factory: () => new Looper() }));
    const h = await e.start('looper', { n: 0 });
    await h.result({ timeout: '10s' });
    expect(await h.describe()).toMatchObject({ runNumber: 3, workflowVersion: '7' });
    expect(() => e.register({ name: 'long', version: 'x'.repeat(65), factory: () => new Looper() })).toThrow(
      expect.objectContaining({ code: 'WEFT_INVALID_ARGUMENT' }),
    );
  });
});
