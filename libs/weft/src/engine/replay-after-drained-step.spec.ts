import { quietLogger, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import { WorkflowReplayer } from './replayer.js';

const bodies: Record<string, number> = {};
const gates = new Map<string, () => void>();

/** A step, then a wait for four signals; the signals are counted by a handler. */
class Collector {
  private got: string[] = [];
  onAdd(p: { token: string }) {
    this.got.push(p.token);
  }
  bump(p: { token: string }) {
    this.got.push(p.token);
    return this.got.length;
  }
  async run(ctx: WorkflowContext, input: { key: string; continued?: boolean; againAtOnce?: boolean }) {
    if (!input.continued) return ctx.continueAsNew({ ...input, continued: true });
    await ctx.step('r1', () => {
      bodies[input.key] = (bodies[input.key] ?? 0) + 1;
      if (bodies[input.key] > 1 && input.againAtOnce) return 1;
      const gate = bodies[input.key] > 1 ? `${input.key}:again` : input.key;
      return new Promise<number>((r) => gates.set(gate, () => r(1)));
    });
    await ctx.condition(() => this.got.length >= 4, { timeout: '30s' });
    return this.got;
  }
}

const def: WorkflowDefinition = {
  name: 'collector',
  factory: () => new Collector() as never,
  signalHandlers: { add: 'onAdd' },
  updateHandlers: { bump: 'bump' },
};
const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: '3s' as const, workflowClaimRenewInterval: '1s' as const };

describe('replay of a history whose first step was run by the engine that took over (real PostgreSQL)', () => {
  const env = useTestEngines();
  /**
   * What a draining engine recorded while r1 (seq 0) was pending and never recorded: a signal and an
   * update at seqs 1 and 2; and a signal still buffered when the next engine takes over.
   */
  const recordedWhileDraining = async (workflowId: string) => {
    const op = `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result, event) VALUES ($1, $2, $3, $4, 'completed', $5::json, $6)`;
    await env.tdb.query(op, [workflowId, 1, 'signal', 'add', JSON.stringify({ token: 't1' }), 0]);
    await env.tdb.query(op, [workflowId, 2, 'update', 'bump', JSON.stringify({ args: { token: 't2' }, value: 2 }), 1]);
    await env.tdb.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name, payload) VALUES ($1, 'signal', 'add', $2::json)`, [
      workflowId,
      JSON.stringify({ token: 't3' }),
    ]);
  };

  it('messages delivered after that step are replayed where the live run applied them', async () => {
    // The shape of chaos seed 424849 (lease): a draining engine refused step r1 (seq 0, never
    // recorded) and took a signal and an update in at seqs 1 and 2; the engine that took over
    // ran r1 live while more messages came. There a third engine's replay suspended the workflow
    // (history had a signal at 3 where the code calls condition): the next test reproduces that
    // (r1 ending before the replay did); here r1 ends long after it, and the replay is checked.
    const a = await env.pool.create({ ...WL, engineId: 'A', shutdownGracePeriod: 0, logger: quietLogger() }, (x) => x.register(def));
    await a.bootstrap();
    const h = await a.start('collector', { key: 'c1' }, { workflowId: 'collector-1' });
    await waitFor(() => gates.has('c1'), 'r1 running on A');
    await a.dispose(); // r1 abandoned: not recorded
    await recordedWhileDraining(h.workflowId);
    const b = await env.pool.create({ ...WL, engineId: 'B', logger: quietLogger() }, (x) => x.register(def));
    await b.bootstrap();
    await waitFor(() => gates.has('c1:again'), 'r1 running on B');
    const upd = b.update(h.workflowId, 'bump', { token: 't4' });
    await new Promise((r) => setTimeout(r, 300));
    gates.get('c1:again')!();
    await upd;
    const out = (await b.handle(h.workflowId).result({ timeout: '20s' })) as string[];
    expect([...out].sort()).toEqual(['t1', 't2', 't3', 't4']);
    const described = await b.describe(h.workflowId);
    const report = await new WorkflowReplayer([def]).replay({ ...described, type: 'collector', input: { key: 'c1', continued: true } });
    expect(report).toMatchObject({ ok: true });
  });

  it('a step that ends before the replay does is followed by its code before any delivery (chaos seed 652852)', async () => {
    // The same history, but the engine that takes over finishes r1 at once, while its replay is
    // still releasing the draining engine's deliveries: r1's result is held until the replay ends
    // (Execution.afterReplay). Delivering a buffered signal as the replay ended, before the code
    // had gone on from r1 to its condition, recorded the signal at the condition's seq; the
    // replay of that history then suspended the workflow (NonDeterminismError at operation 3).
    const a = await env.pool.create({ ...WL, engineId: 'A', shutdownGracePeriod: 0, logger: quietLogger() }, (x) => x.register(def));
    await a.bootstrap();
    const h = await a.start('collector', { key: 'c2', againAtOnce: true }, { workflowId: 'collector-2' });
    await waitFor(() => gates.has('c2'), 'r1 running on A');
    await a.dispose();
    await recordedWhileDraining(h.workflowId);
    const b = await env.pool.create({ ...WL, engineId: 'B', logger: quietLogger() }, (x) => x.register(def));
    await b.bootstrap();
    await waitFor(() => bodies.c2 === 2, 'r1 run again on B');
    await b.signal(h.workflowId, 'add', { token: 't4' });
    const out = (await b.handle(h.workflowId).result({ timeout: '20s' })) as string[];
    expect([...out].sort()).toEqual(['t1', 't2', 't3', 't4']);
    const described = await b.describe(h.workflowId);
    const report = await new WorkflowReplayer([def]).replay({
      ...described,
      type: 'collector',
      input: { key: 'c2', continued: true, againAtOnce: true },
    });
    expect(report).toMatchObject({ ok: true });
    // The code's condition follows r1 in the history; the buffered signal comes after it.
    expect(described.history.map((op) => `${op.seq}:${op.kind}`)).toEqual([
      '0:step',
      '1:signal',
      '2:update',
      '3:condition',
      '4:signal',
      '5:signal',
    ]);
  });
});
