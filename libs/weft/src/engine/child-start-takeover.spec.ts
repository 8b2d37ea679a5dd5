import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import type { Starter } from './starter.js';

let kidBodies = 0;

class Keeper {
  async run(ctx: WorkflowContext) {
    const kid = await ctx.executeChild<number>('kid', {}, { workflowId: `${ctx.workflowId}-kid` });
    await ctx.waitForSignal('go');
    return kid;
  }
}

class Kid {
  async run(ctx: WorkflowContext) {
    return ctx.step('work', () => {
      kidBodies++;
      return 7;
    });
  }
}

describe('a repeated child start and an ended child of the same id (real PostgreSQL)', () => {
  const env = useTestEngines();
  const kidRow = async (id: string) =>
    (
      await env.tdb.query<{ run_number: number; status: string }>(`SELECT run_number, status FROM weft.weft_workflows WHERE id = $1`, [id])
    )[0];

  // Seen in a chaos run (seed 234875): an engine driving a parent again started its child again
  // (a start the parent's history did not hold) after the parent's run had taken the child's end;
  // with no waiting notice, the start restarted the ended child: its steps ran again on another
  // engine and its history was deleted. The start at the seq before the taken end is the same
  // start; one after it is a second start of the same id in this run.
  it('an ended child whose end this run took after the start is returned; after a later start of the id it starts anew', async () => {
    kidBodies = 0;
    const e = await env.pool.create({}, (x: WeftEngine) => x.register('keeper', Keeper).register('kid', Kid));
    await e.bootstrap();
    const h = await e.start('keeper', {});
    const kidId = `${h.workflowId}-kid`;
    const taken = await waitFor(async () => {
      const rows = await env.tdb.query<{ consumed_seq: number }>(
        `SELECT consumed_seq FROM weft.weft_messages WHERE workflow_id = $1 AND kind = 'child' AND consumed_seq IS NOT NULL`,
        [h.workflowId],
      );
      return rows[0];
    }, "the parent took its child's end");
    const [start] = await env.tdb.query<{ seq: number }>(
      `SELECT seq FROM weft.weft_operations WHERE workflow_id = $1 AND kind = 'startChild'`,
      [h.workflowId],
    );
    expect(start.seq).toBeLessThan(taken.consumed_seq);
    const starter = (e as unknown as { starter: Starter }).starter;

    // The start repeated (the same seq): the child is this start's; nothing runs again.
    await expect(starter.startChild(h.workflowId, kidId, 'kid', {}, start.seq, null)).resolves.toBe(kidId);
    expect(await kidRow(kidId)).toEqual({ run_number: 1, status: 'completed' });
    expect(kidBodies).toBe(1);

    // A start of the same id after the end was taken: a new run of the child.
    await starter.startChild(h.workflowId, kidId, 'kid', {}, taken.consumed_seq + 1, null);
    await waitFor(
      async () => (await kidRow(kidId)).run_number === 2 && (await kidRow(kidId)).status === 'completed',
      'the second run ended',
    );
    expect(kidBodies).toBe(2);
  });
});
