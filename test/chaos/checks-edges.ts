// Invariants of issue #32's edge shapes: continue-as-new chains receiving messages around their
// switches ('chain'), ids purged and started again ('reuse'), starts from step bodies ('spawner')
// and cancels of busy workflows ('busycancel'). Their end states and outputs are checkOutcomes';
// what is particular to them is here. Each rule is documented in test/chaos/README.md.
import { story } from './checks-safety.js';
import type { RunData } from './data.js';
import type { ChainSend } from './driver-edges.js';
import { Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

interface ChainOutput {
  tokens?: string[];
  deliveries?: Record<string, number>;
}

/**
 * No accepted message lost: every signal or update of a chain the client had acknowledged
 * (engine.signal resolved, engine.update answered) is among the tokens its final output counts
 * (`accepted_message_lost`). None applied twice: a token delivered more than once is a violation
 * unless the client sent it more than once (a retry whose first try may have landed: the
 * handler's de-duplication by token is then what keeps the count right), `message_applied_twice`.
 * A chain that never ended is `not_terminal` (checkOutcomes): stuck.
 */
export function checkChains(plan: PlannedWorkflow[], d: RunData, chains: Map<string, ChainSend[]>, v: Tally, notes: Tally): void {
  for (const w of plan) {
    const row = d.workflows.get(w.id);
    if (w.shape === 'chain' && row?.status === 'completed')
      checkChain(w.id, (row.output ?? {}) as ChainOutput, d, chains.get(w.id) ?? [], v, notes);
  }
}

function checkChain(id: string, out: ChainOutput, d: RunData, sends: ChainSend[], v: Tally, notes: Tally): void {
  const counted = new Set(out.tokens ?? []);
  for (const s of sends) {
    if (s.acked && !counted.has(s.token))
      v.add('accepted_message_lost', () => ({ workflowId: id, token: s.token, kind: s.kind, story: story(d, id, 25) }));
    const delivered = out.deliveries?.[s.token] ?? 0;
    if (delivered > 1 && s.attempts <= 1) v.add('message_applied_twice', { workflowId: id, token: s.token, kind: s.kind, delivered });
    else if (delivered > 1) notes.add('chain_duplicate_send_deduplicated');
  }
}

/**
 * Continue-as-new deletes the ended run's operations and a purge deletes the whole id: for
 * chains and reused ids the audit's `operation_delete` is expected (counted under
 * `operation_delete_expected:<shape>`); for any other workflow it stays a violation.
 */
export function expectedDeletes(plan: PlannedWorkflow[], d: RunData, notes: Tally): RunData['forbidden'] {
  const shapeOf = new Map(plan.map((w) => [w.id, w.shape]));
  return d.forbidden.filter((f) => {
    const shape = f.workflow_id === null ? undefined : shapeOf.get(f.workflow_id);
    if (f.what !== 'operation_delete' || (shape !== 'chain' && shape !== 'reuse')) return true;
    notes.add(`operation_delete_expected:${shape}`);
    return false;
  });
}
