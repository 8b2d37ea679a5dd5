// Invariants of issue #12's shapes: graceful shutdowns (no workflow fails because of one, and a
// body that finished on a stopping engine is committed, not run again), finished step bodies that
// ran again in a live engine, bodies after a cancel or suspend committed, delayed starts, and
// updates whose callers timed out. Each rule is documented in test/chaos/README.md.
import { stoppedWithin, story, takeoverCause, type FaultWindows } from './checks-safety.js';
import { groupBy, type LedgerRow, type RunData, type WfAuditRow } from './data.js';
import type { ExpiringOutcome } from './driver.js';
import { LEASE_ID } from './schema.js';
import { Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

export interface ShapeCheckOptions {
  ttlMs: number;
  renewMs: number;
  shutdownGraceMs: number;
  /** How long after a fault a takeover is still blamed on it (TTL + 3 renew intervals). */
  claimWindowMs: number;
}

const iso = (t: number) => new Date(t).toISOString();

/** An error that names an engine shutdown or disposal. */
const SHUTDOWN_ERROR = /dispos|shut ?down|shutting|draining|EngineDisposed/i;

/**
 * `failed_by_shutdown`: a workflow ended `failed` with an error naming a shutdown/disposal, or
 * failed by a write of an engine that was being stopped gracefully at that instant.
 * `failed_unexpectedly`: any other failure (this workload never fails a workflow).
 */
export function checkFailures(plan: PlannedWorkflow[], d: RunData, w: FaultWindows, v: Tally): void {
  const planned = new Map(plan.map((p) => [p.id, p]));
  for (const row of d.workflows.values()) {
    if (row.status !== 'failed') continue;
    if (planned.get(row.id)?.allowedStatuses.includes('failed')) continue;
    const text = JSON.stringify(row.error ?? '');
    const write = [...d.wfAudit].reverse().find((a) => a.workflow_id === row.id && a.new_status === 'failed');
    const writer = write?.writer.replace(/^weft:/, '');
    const stop = write && w.gracefulStops.find((g) => g.engineId === writer && write.at_ms >= g.from && write.at_ms <= g.to + 1000);
    const kind = SHUTDOWN_ERROR.test(text) || stop ? 'failed_by_shutdown' : 'failed_unexpectedly';
    v.add(kind, () => ({
      workflowId: row.id,
      error: row.error,
      failedBy: write?.writer,
      at: write ? iso(write.at_ms) : null,
      duringGracefulStopOf: stop ? { engineId: stop.engineId, from: iso(stop.from), to: iso(stop.to) } : null,
      story: story(d, row.id, 30),
    }));
  }
}

/** Why the claim (or, under 'lease', the lease) `engine` held was lost in [from, to]; null if it was not. */
function claimLoss(
  d: RunData,
  workflowId: string,
  engine: string,
  from: number,
  to: number,
  w: FaultWindows,
  windowMs: number,
): string | null {
  const key = d.ownership === 'lease' ? LEASE_ID : workflowId;
  for (const c of d.claimAudit) {
    if (c.workflow_id !== key || c.at_ms < from || c.at_ms > to) continue;
    if (c.old_engine !== engine || c.old_epoch === c.new_epoch) continue; // not held by it, or a release
    if (c.new_engine === null) return 'rotated-by-external-transition';
    return `taken:${takeoverCause(engine, c.at_ms, w, windowMs)}`;
  }
  if (d.ownership === 'lease' && w.leaseLost.some((l) => l.engineId === engine && l.at >= from && l.at <= to)) return 'taken:lease-lost';
  return null;
}

/**
 * `finished_step_rerun_in_live_engine`: a step body that finished (end-of-body mark, its signal not
 * aborted) and then ran again (a later body of the same step, started after it finished, while the
 * step's result was not recorded yet), though the engine that finished it was not killed, not
 * paused, and did not really lose the claim in between. Sub-kinds: `:after_graceful_stop` (it
 * finished within the shutdown grace period of an engine stopped by SIGTERM: a graceful shutdown
 * must commit finished results) and `:across_postgres_restart` (a restart shorter than the TTL:
 * the guarantees (docs/concepts.md) say the engine commits that same result again). Excused re-runs are counted under
 * `steps.notes.finished_rerun_excused:*`; a re-run after a claim was taken from a live engine is
 * the anomaly `finished_step_rerun_after_claim_taken_from_live_engine`.
 */
export function checkFinishedReruns(d: RunData, w: FaultWindows, o: ShapeCheckOptions, v: Tally, notes: Tally, anomalies: Tally): void {
  for (const unordered of groupBy(d.ledger, (l) => `${l.workflow_id}#${l.seq}`).values()) {
    if (unordered.length < 2) continue;
    const runs = [...unordered].sort((a, b) => a.started_ms - b.started_ms);
    for (const r of runs) {
      if (r.finished_ms === null) continue;
      const again = runs.find((x) => x.id !== r.id && x.started_ms > r.finished_ms! && !x.op_recorded);
      if (!again) continue;
      const verdict = judgeRerun(d, r, again, w, o);
      if (verdict.excused) notes.add(`finished_rerun_excused:${verdict.why}`);
      else if (verdict.anomaly) anomalies.add(verdict.anomaly, () => rerunSample(d, r, again, w, verdict.why));
      else v.add(verdict.kind!, () => rerunSample(d, r, again, w, verdict.why));
    }
  }
}

type Verdict =
  { excused: true; why: string; anomaly?: never; kind?: never } | { excused: false; why: string; anomaly?: string; kind?: string };

function judgeRerun(d: RunData, r: LedgerRow, again: LedgerRow, w: FaultWindows, o: ShapeCheckOptions): Verdict {
  const e = r.engine;
  const from = r.started_ms;
  const to = again.started_ms;
  // A transactional body whose transaction did not commit (a fence, a lost commit, a restart) wrote
  // nothing that lasted: the step must run again (checkTxRows judges what did commit).
  if (r.workflow_id.endsWith('-txsteps') && !d.txCommitted.has(r.id)) return { excused: true, why: 'transaction-rolled-back' };
  if (w.kills.some((k) => k.engineId === e && k.at >= from && k.at <= to)) return { excused: true, why: 'engine-killed' };
  if (w.pauses.some((p) => p.engineId === e && p.from <= to && p.to >= from)) return { excused: true, why: 'engine-paused' };
  const stop = w.gracefulStops.find((g) => g.engineId === e && g.from <= to && g.to >= from);
  if (stop && r.finished_ms! > stop.from + o.shutdownGraceMs) return { excused: true, why: 'finished-after-the-grace-period' };
  // A suspend or cancel ends that run (its commit is refused): at-least-once. Committed after the
  // body started, or up to a TTL before it: a deposed engine learns of the rotation only at its
  // next fenced write, so a body may start in that window (step_ran_after_* bounds it).
  if (stoppedWithin(w, r.workflow_id, from, to, o.ttlMs)) return { excused: true, why: 'suspended-or-cancelled' };
  const lost = claimLoss(d, r.workflow_id, e, from, to, w, o.claimWindowMs);
  if (lost === 'taken:holder-live') return { excused: false, why: lost, anomaly: 'finished_step_rerun_after_claim_taken_from_live_engine' };
  if (lost) return { excused: true, why: `claim-lost:${lost}` };
  const outage = w.pgDown.find((p) => p.from <= to && p.to >= from);
  if (outage && outage.to - outage.from >= o.ttlMs) return { excused: true, why: 'postgres-outage-longer-than-ttl' };
  if (stop)
    return {
      excused: false,
      why: 'finished on an engine stopped gracefully',
      kind: 'finished_step_rerun_in_live_engine:after_graceful_stop',
    };
  if (outage) {
    return {
      excused: false,
      why: 'postgres restart shorter than the TTL',
      kind: 'finished_step_rerun_in_live_engine:across_postgres_restart',
    };
  }
  if (r.finished_aborted)
    return { excused: false, why: 'aborted by its engine, claim not lost', kind: 'finished_step_rerun_in_live_engine' };
  return { excused: false, why: 'no fault explains it', kind: 'finished_step_rerun_in_live_engine' };
}

function rerunSample(d: RunData, r: LedgerRow, again: LedgerRow, w: FaultWindows, why: string): unknown {
  const line = (l: LedgerRow) => ({
    engine: l.engine,
    attempt: l.attempt,
    started: iso(l.started_ms),
    finished: l.finished_ms === null ? null : iso(l.finished_ms),
    aborted: l.finished_aborted,
    claimAtStart: { epoch: l.claim_epoch, engine: l.claim_engine, live: l.claim_live },
  });
  const near = (t: number) => t >= r.started_ms - 5000 && t <= again.started_ms + 1000;
  return {
    workflowId: r.workflow_id,
    seq: r.seq,
    why,
    finished: line(r),
    ranAgain: line(again),
    faults: {
      gracefulStops: w.gracefulStops.filter((g) => near(g.from) || near(g.to)).map((g) => ({ ...g, from: iso(g.from), to: iso(g.to) })),
      pgDown: w.pgDown.filter((p) => near(p.from) || near(p.to)).map((p) => ({ from: iso(p.from), to: iso(p.to) })),
      kills: w.kills.filter((k) => near(k.at)).map((k) => ({ ...k, at: iso(k.at) })),
    },
    story: story(d, r.workflow_id, 40),
  };
}

/**
 * After a cancel or suspend committed (the workflow's status write), no step body of it starts
 * until a resume, except in the documented in-flight window: its owner learns of the epoch
 * rotation at its next renewal or commit, and never runs a body more than the TTL after its last
 * renewal. So: a body started more than TTL after the stop is `step_ran_after_cancel` /
 * `step_ran_after_suspend`; one under a claim epoch acquired after the stop (workflow-lease: the
 * claim the body's ledger row saw was acquired after the status write and before the body began) is
 * `step_ran_after_cancel:under_claim_acquired_after_it` (the start/cancel race); others are noted.
 */
export function checkStopWindows(d: RunData, w: FaultWindows, o: ShapeCheckOptions, v: Tally, notes: Tally): void {
  const ledgerByWf = groupBy(d.ledger, (l) => l.workflow_id);
  for (const [wf, rows] of groupBy(d.wfAudit, (a) => a.workflow_id)) {
    const bodies = ledgerByWf.get(wf);
    if (!bodies) continue;
    rows.forEach((a, i) => {
      if ((a.new_status !== 'cancelled' && a.new_status !== 'suspended') || a.old_status === a.new_status) return;
      const resume = rows.slice(i + 1).find((b) => b.new_status === 'running');
      // The body clock has ms resolution and a resume acquires the claim just before its write: a
      // body under the resumer's claim, started within 50 ms of the resume write, belongs to the resumed run.
      const end = resume ? resume.at_ms - 50 : Infinity;
      for (const b of bodies) {
        if (b.started_ms <= a.at_ms || b.started_ms >= end + 50) continue;
        if (resume && b.started_ms >= end && `weft:${b.engine}` === resume.writer) continue;
        judgeBodyAfterStop(d, a, b, w, o, v, notes);
      }
    });
  }
}

function judgeBodyAfterStop(d: RunData, a: WfAuditRow, b: LedgerRow, w: FaultWindows, o: ShapeCheckOptions, v: Tally, notes: Tally): void {
  const what = a.new_status === 'cancelled' ? 'cancel' : 'suspend';
  if (w.pauses.some((p) => p.engineId === b.engine && p.from <= b.started_ms && p.to + o.claimWindowMs >= a.at_ms)) {
    notes.add(`body_after_${what}:excused_paused_engine`);
    return;
  }
  const acquiredAt = acquisitionOf(d, b);
  const sample = () => ({
    workflowId: b.workflow_id,
    seq: b.seq,
    engine: b.engine,
    stoppedAt: iso(a.at_ms),
    stoppedBy: a.writer,
    bodyStarted: iso(b.started_ms),
    msAfterStop: Math.round(b.started_ms - a.at_ms),
    claimAtBody: { epoch: b.claim_epoch, engine: b.claim_engine, live: b.claim_live, acquiredAt: acquiredAt && iso(acquiredAt) },
    story: story(d, b.workflow_id, 30),
  });
  // The row's claim is read when the row is written: one acquired after the body began (a ledger
  // write that lagged on a loaded machine) is not the claim the body started under.
  const startedUnder = acquiredAt !== null && acquiredAt > a.at_ms && acquiredAt <= b.started_ms;
  if (startedUnder) v.add(`step_ran_after_${what}:under_claim_acquired_after_it`, sample);
  else if (b.started_ms > a.at_ms + o.ttlMs + 250) v.add(`step_ran_after_${what}`, sample);
  else notes.add(`body_after_${what}:in_flight_window`);
}

/** When the claim epoch a body's ledger row saw was acquired by that body's engine (workflow-lease only). */
function acquisitionOf(d: RunData, b: LedgerRow): number | null {
  if (d.ownership === 'lease' || b.claim_engine !== b.engine || b.claim_epoch === null) return null;
  const acq = d.claimAudit.find(
    (c) => c.workflow_id === b.workflow_id && c.new_epoch === b.claim_epoch && c.new_engine === b.engine && c.old_engine !== b.engine,
  );
  return acq?.at_ms ?? null;
}

/** `delayed_start_ran_early`: a delayed start's first step body started before its due time. */
export function checkDelayedStarts(plan: PlannedWorkflow[], d: RunData, v: Tally): void {
  const ledgerByWf = groupBy(d.ledger, (l) => l.workflow_id);
  for (const p of plan) {
    if (p.shape !== 'delayed') continue;
    const due = d.workflows.get(p.id)?.start_at_ms;
    const first = Math.min(...(ledgerByWf.get(p.id) ?? []).map((l) => l.started_ms));
    if (due && first < due - 50) v.add('delayed_start_ran_early', { workflowId: p.id, due: iso(due), firstBody: iso(first) });
  }
}

/** Applied ('done') update requests of a workflow, in consumption order. */
export function appliedUpdates(d: RunData, workflowId: string) {
  return d.messages
    .filter((m) => m.workflow_id === workflowId && m.kind === 'update' && m.status === 'done')
    .sort((a, b) => (a.consumed_seq ?? 0) - (b.consumed_seq ?? 0));
}

/**
 * Updates whose callers may time out ('expiring'): applied ones return 1, 2, ... in consumption
 * order; an expired request is never consumed; one the client saw time out was not applied; one
 * it saw applied is stored 'done' with the value it got.
 */
export function checkExpiringUpdates(
  plan: PlannedWorkflow[],
  d: RunData,
  outcomes: Map<string, ExpiringOutcome[]>,
  v: Tally,
  notes: Tally,
): void {
  for (const p of plan) {
    if (p.shape !== 'expiring') continue;
    const done = appliedUpdates(d, p.id);
    const values = done.map((m) => Number(m.result?.value));
    if (values.some((x, i) => x !== i + 1)) v.add('update_results_wrong', { workflowId: p.id, appliedInOrder: values });
    const consumedExpired = d.messages.filter(
      (m) => m.workflow_id === p.id && m.kind === 'update' && m.status === 'expired' && m.consumed_seq !== null,
    );
    for (const m of consumedExpired)
      v.add('expired_update_consumed', { workflowId: p.id, id: m.id, seq: m.consumed_seq, story: story(d, p.id, 30) });
    for (const c of outcomes.get(p.id) ?? []) judgeClientUpdate(p.id, c, done, v, notes);
  }
}

function judgeClientUpdate(workflowId: string, c: ExpiringOutcome, done: RunData['messages'], v: Tally, notes: Tally): void {
  notes.add(`expiring_update:${c.outcome}${c.fromDb ? ':from_db' : ''}`);
  const row = done.find((m) => m.payload?.token === c.token);
  if (c.outcome === 'timed_out' && row) v.add('update_timed_out_but_applied', { workflowId, token: c.token, value: row.result?.value });
  if (c.outcome === 'applied' && Number(row?.result?.value) !== c.value) {
    v.add('update_acknowledged_but_not_stored', { workflowId, token: c.token, acknowledged: c.value, stored: row?.result ?? null });
  }
}
