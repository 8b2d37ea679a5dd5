// 'chaos.txsteps' (issue 35): each transactional step writes one application row (chaos.tx_rows) in
// its own transaction, which commits it with the step's record or not at all.
import { groupBy, type RunData } from './data.js';
import type { Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

/**
 * Application rows written by transactional steps: exactly one per recorded step, and it is the row
 * of the body whose result was recorded (both committed together); none for a step with no record.
 */
export function checkTxRows(plan: PlannedWorkflow[], d: RunData, v: Tally, notes: Tally): void {
  const rows = groupBy(d.txRows, (r) => `${r.workflow_id}#${r.seq}`);
  for (const w of plan.filter((p) => p.shape === 'txsteps')) {
    for (const o of d.ops.get(w.id) ?? []) {
      if (o.kind !== 'step' || o.status !== 'completed') continue;
      const key = `${w.id}#${o.seq}`;
      const mine = rows.get(key) ?? [];
      rows.delete(key);
      const lid = (o.result as { lid?: string } | null)?.lid ?? null;
      if (mine.length === 0) v.add('tx_row_missing', { workflowId: w.id, seq: o.seq });
      else if (mine.length > 1) v.add('tx_row_duplicated', { workflowId: w.id, seq: o.seq, rows: mine });
      else if (mine[0].lid !== lid) v.add('tx_row_of_another_body', { workflowId: w.id, seq: o.seq, recorded: lid, row: mine[0] });
      else notes.add('tx_rows_exactly_once');
    }
  }
  for (const [key, left] of rows) v.add('tx_row_without_record', { key, rows: left });
}
