// Invariants on what the run left behind: terminal states, outputs, histories, messages, claims.
import { story, TERMINAL } from './checks-safety.js';
import { appliedUpdates } from './checks-shapes.js';
import type { MessageRow, OpRow, RunData } from './data.js';
import { canonical, Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

/** What of a completed workflow's output is compared: a chain's delivery counts are checkChains' (checks-edges.ts). */
function comparable(w: PlannedWorkflow, output: unknown): unknown {
  if (w.shape !== 'chain' || !output || typeof output !== 'object') return output;
  const { deliveries: _, ...rest } = output as Record<string, unknown>;
  return rest;
}

/** The expected output; an 'expiring' workflow's counter is the number of its updates applied (stored 'done'). */
export function expectedOutputOf(w: PlannedWorkflow, d: RunData): unknown {
  if (w.shape !== 'expiring') return w.expectedOutput;
  return { ...(w.expectedOutput as object), counter: appliedUpdates(d, w.id).length };
}

/**
 * Every planned workflow ended in a status its shape allows (completed; a cancel race may end
 * cancelled) and, when completed, with the expected output; nothing unplanned exists. Failed
 * workflows are judged by checkFailures (failed_by_shutdown / failed_unexpectedly).
 */
export function checkOutcomes(plan: PlannedWorkflow[], d: RunData, v: Tally): void {
  const planned = new Set(plan.map((w) => w.id));
  for (const w of plan) {
    const row = d.workflows.get(w.id);
    if (!row) {
      v.add('workflow_missing', { workflowId: w.id });
      continue;
    }
    if (row.status === 'failed' && !(w.allowedStatuses ?? ['completed']).includes('failed')) continue;
    if (row.status !== 'completed') {
      if ((w.allowedStatuses ?? ['completed']).includes(row.status)) continue;
      v.add(TERMINAL.has(row.status) ? 'wrong_terminal_status' : 'not_terminal', () => ({
        workflowId: w.id,
        status: row.status,
        error: row.error,
        story: story(d, w.id, 25),
      }));
      continue;
    }
    const expected = expectedOutputOf(w, d);
    if (canonical(comparable(w, row.output)) !== canonical(expected)) {
      v.add('wrong_output', { workflowId: w.id, expected, actual: row.output });
    }
  }
  for (const id of d.workflows.keys()) if (!planned.has(id)) v.add('unexpected_workflow', { workflowId: id });
}

function countKinds(ops: OpRow[]): Record<string, number> {
  const c: Record<string, number> = {};
  for (const o of ops) c[o.kind] = (c[o.kind] ?? 0) + 1;
  return c;
}

/** Expected kinds plus one delivery op per consumed signal-with-handler / applied update. */
function expectedKinds(w: PlannedWorkflow, msgs: MessageRow[]): Record<string, number> {
  const k = { ...w.expectedKinds };
  const signals = msgs.filter((m) => m.kind === 'signal' && m.name === 'add' && m.consumed_seq !== null).length;
  const updates = msgs.filter((m) => m.kind === 'update' && m.consumed_seq !== null).length;
  if (signals) k.signal = signals;
  if (updates) k.update = updates;
  return k;
}

/** Shapes whose steps write no ledger row (their seqs repeat across runs of one id). */
const UNLEDGERED = new Set(['chain', 'reuse']);

/** Histories are contiguous, of the expected shape, and every step result is the expected one. */
export function checkHistories(plan: PlannedWorkflow[], d: RunData, msgsByWf: Map<string, MessageRow[]>, v: Tally): void {
  const ledgerById = new Map(d.ledger.map((l) => [l.id, l]));
  for (const w of plan) {
    const ops = d.ops.get(w.id) ?? [];
    const status = d.workflows.get(w.id)?.status;
    if (status === 'cancelled' && w.allowedStatuses?.includes('cancelled')) {
      checkCancelledHistory(w, ops, d, ledgerById, v);
      continue;
    }
    if (status !== 'completed') continue;
    const gap = ops.findIndex((o, i) => o.seq !== i);
    if (gap >= 0) v.add('history_not_contiguous', { workflowId: w.id, seqs: ops.map((o) => o.seq) });
    const failed = ops.filter((o) => o.status !== 'completed');
    if (failed.length) v.add('history_failed_operation', { workflowId: w.id, ops: failed.map((o) => `${o.seq}:${o.name}`) });
    const kinds = countKinds(ops);
    const want = expectedKinds(w, msgsByWf.get(w.id) ?? []);
    if (w.shape === 'chain') {
      // Its deliveries are counted by checkChains: update rows outlive the run that consumed them.
      for (const k of ['signal', 'update']) {
        delete kinds[k];
        delete want[k];
      }
    }
    if (canonical(kinds) !== canonical(want)) v.add('history_shape', { workflowId: w.id, expected: want, actual: kinds });
    // A chain's history is its last run's; a reused id's steps write no ledger row.
    if (!UNLEDGERED.has(w.shape)) checkLedgeredSteps(w, ops, d, ledgerById, v);
  }
}

/** The steps s0.. in order, each with its expected result and its body (a spawner's other steps write no ledger row). */
function checkLedgeredSteps(
  w: PlannedWorkflow,
  ops: OpRow[],
  d: RunData,
  ledgerById: Map<string, RunData['ledger'][number]>,
  v: Tally,
): void {
  const steps = ops.filter((o) => o.kind === 'step' && (w.shape !== 'spawner' || /^s\d+$/.test(o.name)));
  const names = steps.map((o) => o.name).join(',');
  const count = w.shape === 'spawner' ? 1 : w.input.steps;
  const wantNames = Array.from({ length: count }, (_, i) => `s${i}`).join(',');
  if (names !== wantNames) v.add('history_step_order', { workflowId: w.id, expected: wantNames, actual: names });
  for (const o of steps) checkStepResult(w, o, d, ledgerById, v);
}

/**
 * A cancelled run's history is a contiguous prefix of the steps, each with its right result and
 * body, then (when its code took the cancel: docs/cancellation.md) the cancel, recorded once, last,
 * at the seq after them or one further (the step in flight at the cancel took a seq and was never
 * recorded). A cancel that ended it at once (not running yet, or its grace period) records none.
 */
function checkCancelledHistory(
  w: PlannedWorkflow,
  ops: OpRow[],
  d: RunData,
  ledgerById: Map<string, RunData['ledger'][number]>,
  v: Tally,
): void {
  // A cancelled cleanup workflow's history goes on after the cancel: checkCleanups (checks-cleanup.ts).
  if (w.shape === 'cancelcleanup') return;
  const cancels = ops.filter((o) => o.kind === 'cancelRequested');
  const steps = ops.filter((o) => o.kind !== 'cancelRequested');
  if (cancels.length > 1) v.add('cancel_recorded_twice', { workflowId: w.id, seqs: cancels.map((o) => o.seq) });
  const cancel = cancels[0];
  if (cancel && (ops[ops.length - 1] !== cancel || cancel.seq < steps.length || cancel.seq > steps.length + 1)) {
    v.add('cancel_out_of_place', { workflowId: w.id, seqs: ops.map((o) => `${o.seq}:${o.kind}`) });
  }
  if (steps.some((o, i) => o.seq !== i)) v.add('history_not_contiguous', { workflowId: w.id, seqs: ops.map((o) => o.seq) });
  const names = steps.map((o) => o.name).join(',');
  const want = Array.from({ length: steps.length }, (_, i) => `s${i}`).join(',');
  if (steps.some((o) => o.kind !== 'step') || names !== want)
    v.add('history_step_order', { workflowId: w.id, expected: want, actual: names });
  for (const o of steps) if (o.kind === 'step') checkStepResult(w, o, d, ledgerById, v);
}

/** A recorded step `<letter><i>` returns its value for i and names its body, which ran on the engine that recorded it. */
export function checkStepResult(
  w: PlannedWorkflow,
  o: OpRow,
  d: RunData,
  ledgerById: Map<string, RunData['ledger'][number]>,
  v: Tally,
): void {
  const r = o.result as { v?: number; lid?: string } | null;
  const i = Number(o.name.slice(1));
  if (r?.v !== w.input.salt + 7 * (i + 1)) v.add('step_result_wrong', { workflowId: w.id, seq: o.seq, result: r });
  const body = r?.lid ? ledgerById.get(r.lid) : undefined;
  if (!body || body.workflow_id !== w.id || body.seq !== o.seq) {
    v.add('step_recorded_without_its_body', { workflowId: w.id, seq: o.seq, ledgerId: r?.lid ?? null });
    return;
  }
  const writer = d.opWriters.get(`${w.id}#${o.seq}`);
  if (writer !== `weft:${body.engine}`) {
    v.add('step_result_committed_by_another_engine', { workflowId: w.id, seq: o.seq, bodyEngine: body.engine, writer });
  }
}

const tokenOf = (m: MessageRow) => m.payload?.token ?? null;

const consumerKind = (m: MessageRow) =>
  m.kind === 'cancel'
    ? 'cancelRequested'
    : m.kind === 'child'
      ? 'childResult'
      : m.kind === 'update'
        ? 'update'
        : m.name === 'add'
          ? 'signal'
          : 'waitForSignal';

/**
 * Each stored message was consumed at most once, by the right kind of operation; none was lost.
 * `chains`: continue-as-new deletes the ended run's operations but keeps its recent update rows
 * (their callers read the result), so their seqs name nothing left; only loss is judged there.
 */
export function checkMessages(
  d: RunData,
  msgsByWf: Map<string, MessageRow[]>,
  v: Tally,
  anomalies: Tally,
  chains = new Set<string>(),
): void {
  for (const [wf, msgs] of msgsByWf) {
    const ops = new Map((d.ops.get(wf) ?? []).map((o) => [o.seq, o]));
    const terminal = TERMINAL.has(d.workflows.get(wf)?.status ?? '');
    const seqs = new Set<number>();
    const appliedTokens = new Set(msgs.filter((m) => m.consumed_seq !== null).map(tokenOf));
    for (const m of msgs) {
      if (m.consumed_seq === null) {
        if (terminal && m.status !== 'expired') unconsumed(wf, m, appliedTokens, v, anomalies);
        continue;
      }
      if (!chains.has(wf)) checkConsumed(wf, m, m.consumed_seq, ops, seqs, v);
    }
  }
}

/** A consumed message: alone at its seq, consumed by an operation of its kind and name. */
function checkConsumed(wf: string, m: MessageRow, seq: number, ops: Map<number, OpRow>, seqs: Set<number>, v: Tally): void {
  if (seqs.has(seq)) v.add('two_messages_consumed_at_one_seq', { workflowId: wf, seq });
  seqs.add(seq);
  const op = ops.get(seq);
  if (!op || op.kind !== consumerKind(m) || op.name !== m.name) {
    v.add('message_consumed_by_wrong_operation', { workflowId: wf, id: m.id, seq, op: op ? `${op.kind}:${op.name}` : null });
  }
}

/** A message a finished workflow never consumed: lost, unless it duplicates one it did (a client retry). */
function unconsumed(wf: string, m: MessageRow, appliedTokens: Set<string | null>, v: Tally, anomalies: Tally): void {
  if (tokenOf(m) && appliedTokens.has(tokenOf(m))) anomalies.add('duplicate_client_send_left_unconsumed', { workflowId: wf, id: m.id });
  // A cancel is a request: one stored as the code ran to its end came too late, and the end stands (docs/cancellation.md).
  else if (m.kind === 'cancel') anomalies.add('cancel_requested_as_it_ended', { workflowId: wf, id: m.id });
  else v.add('message_never_consumed', { workflowId: wf, id: m.id, kind: m.kind, name: m.name, status: m.status });
}

/**
 * Terminal workflows are fenced against every engine and have no timer. Under workflow-lease a
 * live row's fence epoch is its claim's while the claim has a holder, and none otherwise
 * (docs/decisions/0008); a terminal commit clears the fence and leaves the claim row naming its
 * last holder, which then holds nothing (docs/decisions/0011), so an ended row's fence is none.
 */
export function checkEndState(d: RunData, v: Tally): void {
  for (const w of d.workflows.values()) {
    const claim = d.heldClaims.get(w.id);
    const ended = TERMINAL.has(w.status);
    if (d.ownership === 'workflow-lease' && w.fence_epoch !== undefined) {
      if (ended && w.fence_epoch !== null)
        v.add('fence_left_after_terminal', () => ({
          workflowId: w.id,
          fenceEpoch: w.fence_epoch,
          claim: claim ?? null,
          story: story(d, w.id, 30),
        }));
      if (!ended && w.fence_epoch !== (claim?.epoch ?? null))
        v.add('fence_epoch_not_the_claim', { workflowId: w.id, status: w.status, fenceEpoch: w.fence_epoch, claim: claim ?? null });
    }
    if (!ended) continue;
    const timers = d.timers.get(w.id);
    if (timers) v.add('timer_left_after_terminal', { workflowId: w.id, timers });
  }
}

/** Sequential updates of one client return 1, 2, ..., K. */
export function checkUpdateResults(plan: PlannedWorkflow[], results: Map<string, number[]>, v: Tally): void {
  for (const w of plan) {
    if (w.shape !== 'updates') continue;
    const got = results.get(w.id) ?? [];
    const want = w.updates.map((_, k) => k + 1);
    if (canonical(got) !== canonical(want)) v.add('update_results_wrong', { workflowId: w.id, expected: want, actual: got });
  }
}
