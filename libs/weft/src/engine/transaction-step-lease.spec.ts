import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

/** Each gated body parks here until the test lets it return; bodies run are counted by key. */
const gates = new Map<string, () => void>();
const runs: Record<string, number> = {};

class TxBody {
  async run(ctx: WorkflowContext, input: { key: string; gated: boolean }) {
    return ctx.transaction('tx', async () => {
      runs[input.key] = (runs[input.key] ?? 0) + 1;
      if (input.gated) await new Promise<void>((resolve) => gates.set(input.key, resolve));
      return 1;
    });
  }
}

const TTL_MS = 900;

describe("ownership 'lease': a transactional step waiting for its connection (real PostgreSQL)", () => {
  const env = useTestEngines();

  it('does not begin its body once the lease lapsed by the engine’s own clock meanwhile', async () => {
    // Chaos lease soaks (seeds 101, 202, 303, 404): a holder SIGSTOPped past its TTL began
    // transactional bodies a second after SIGCONT, after its successor had recorded those steps
    // (step_ran_after_result_recorded): the lease was judged before the body waited for its
    // connection, not after. poolSize 3 leaves one connection to transactional bodies.
    const a = await env.pool.create(
      {
        database: { url: env.tdb.url, poolSize: 3 },
        schema: 'tx_lease',
        engineId: 'A1',
        ownership: 'lease',
        leaseTtl: TTL_MS,
        leaseRenewInterval: 300,
        backgroundTasks: 'manual', // nothing renews A's lease
      },
      (e) => e.register('tx', TxBody),
    );
    await a.bootstrap();
    await a.start('tx', { key: 'first', gated: true }, { workflowId: 'first' });
    await waitFor(() => gates.has('first'), 'the first body holding the one transaction slot');
    await a.start('tx', { key: 'late', gated: false }, { workflowId: 'late' });
    const since = performance.now();
    await waitFor(() => performance.now() - since > TTL_MS, "A's lease past its TTL by A's clock");
    expect(runs.late).toBeUndefined(); // still waiting for the slot
    gates.get('first')!();
    // The slot goes to the late step once the first one's commit is through: it either begins its
    // body (the defect) or, judging the lease again, halts the engine.
    await waitFor(() => runs.late !== undefined || a.ownership.gate.isHalted, 'the late step given the slot');
    expect(runs.late).toBeUndefined();
    expect(a.ownership.gate.isHalted).toBe(true);
  });
});
