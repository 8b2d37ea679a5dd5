import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import type { WeftEngine } from './engine.js';

interface TallyInput {
  count: number;
  round: number;
  rounds: number;
}

/** While set, the first round's step body waits on it (the engine that first runs it never finishes it). */
let gate: Promise<never> | null = null;

/** A chain that carries a counter: each round is one step, then the switch (no wait in between). */
class Tally {
  private count!: number;

  async run(ctx: WorkflowContext, input: TallyInput) {
    this.count = input.count;
    await ctx.step('work', () => gate ?? input.round);
    if (input.round < input.rounds) return ctx.continueAsNew({ ...input, count: this.count, round: input.round + 1 });
    return { count: this.count, run: ctx.runNumber };
  }

  add(n: number) {
    this.count += n;
  }
}

const tally: WorkflowDefinition = {
  name: 'tally',
  factory: () => new Tally() as never,
  signalHandlers: { add: 'add' },
};

describe('continue-as-new after a replay whose history holds deliveries past an unrecorded step (real PostgreSQL)', () => {
  const env = useTestEngines();
  const engine = async () => {
    const e = await env.pool.create({}, (x: WeftEngine) => x.register(tally));
    await e.bootstrap();
    return e;
  };

  // The history an engine leaves when it is stopped gracefully while the run waits on a step it
  // may no longer start (the drain refuses it, so the step is never recorded) and a signal then
  // reaches the run: the delivery is recorded at the seq after the step's. The engine that takes
  // over runs the step live; the switch right after it must still see the delivery applied.
  it('a delivery recorded after a step the run never finished is applied before that step returns: the switch carries it', async () => {
    gate = new Promise<never>(() => undefined);
    const a = await engine();
    const h = await a.start('tally', { count: 100, round: 1, rounds: 2 } satisfies TallyInput);
    await a.dispose(); // the step body never finished: nothing recorded
    gate = null;
    await env.tdb.query(
      `INSERT INTO weft.weft_messages (workflow_id, kind, name, payload, consumed_seq, status)
       VALUES ($1, 'signal', 'add', '5', 1, 'consumed')`,
      [h.workflowId],
    );
    await env.tdb.query(
      `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result, event)
       VALUES ($1, 1, 'signal', 'add', 'completed', '5', 0)`,
      [h.workflowId],
    );
    const b = await engine();
    // Before the fix the switch met the delivery still unreplayed: suspended (NonDeterminismError).
    const row = async () =>
      (
        await env.tdb.query<{ status: string; error: unknown }>(`SELECT status, error FROM weft.weft_workflows WHERE id = $1`, [
          h.workflowId,
        ])
      )[0];
    const ended = await waitFor(
      async () => {
        const r = await row();
        return r.status === 'running' ? null : r;
      },
      'run 2 ended',
      20_000,
    );
    expect(ended).toMatchObject({ status: 'completed', error: null });
    expect(await b.result(h.workflowId)).toEqual({ count: 105, run: 2 });
  });
});
