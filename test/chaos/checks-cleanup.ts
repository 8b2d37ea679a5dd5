// Invariants of 'chaos.cancelcleanup' (issue #38): heartbeating steps cancelled while one runs, and
// a cleanup run under ctx.nonCancellable (docs/cancellation.md, docs/long-steps.md). The cleanup ran
// to completion or the workflow is still running; no acknowledged cancel is lost; a retried step
// never resumes behind a heartbeat recorded before it. Each rule is documented in test/chaos/README.md.
import type { FaultWindows } from './checks-safety.js';
import { story, TERMINAL } from './checks-safety.js';
import { checkStepResult } from './checks-state.js';
import { groupBy, type LedgerRow, type OpRow, type ProgressAuditRow, type RunData } from './data.js';
import type { CancelOutcome } from './driver.js';
import { LEASE_ID } from './schema.js';
import { Tally } from './util.js';
import { cleanupOps, type PlannedWorkflow } from './workload.js';

const iso = (t: number) => new Date(t).toISOString();
const opLine = (o: OpRow) => `${o.kind}:${o.name}`;

/**
 * A cancelled 'cancelcleanup' history: the steps s0.. (a contiguous prefix, each with its result
 * and body), the cancel once, at the seq after them or one further (the step in flight took a seq),
 * then the whole cleanup, contiguous: c0, the sleep, c1, c2, each recorded once with its result
 * and its body (its ledger row: the side effect happened at least once). A cancelled workflow
 * whose cleanup is missing or partial is `cleanup_incomplete` (it must not end before its cleanup
 * did: a grace period that ran out under the run is one too); a cleanup step recorded twice is
 * `cleanup_step_recorded_twice`; anything else out of place `cleanup_out_of_order`. A workflow
 * still running is `not_terminal` (checkOutcomes), a completed one has no cleanup (checkHistories).
 */
export function checkCleanups(plan: PlannedWorkflow[], d: RunData, v: Tally, notes: Tally): void {
  const ledgerById = new Map(d.ledger.map((l) => [l.id, l]));
  for (const w of plan) {
    if (w.shape !== 'cancelcleanup' || d.workflows.get(w.id)?.status !== 'cancelled') continue;
    const ops = d.ops.get(w.id) ?? [];
    const at = ops.findIndex((o) => o.kind === 'cancelRequested');
    const cancel = ops[at];
    const before = at < 0 ? ops : ops.slice(0, at);
    const after = at < 0 ? [] : ops.slice(at + 1);
    const sample = () => ({ workflowId: w.id, ops: ops.map((o) => `${o.seq}:${opLine(o)}`), story: story(d, w.id, 30) });
    if (before.some((o, i) => o.seq !== i || opLine(o) !== `step:s${i}`)) v.add('history_step_order', sample);
    if (cancel && (cancel.seq < before.length || cancel.seq > before.length + 1)) v.add('cancel_out_of_place', sample);
    if (after.some((o, i) => o.seq !== cancel.seq + 1 + i)) v.add('history_not_contiguous', sample);
    judgeCleanup(w, after, v, notes, sample);
    for (const o of ops) if (o.kind === 'step') checkStepResult(w, o, d, ledgerById, v);
  }
}

function judgeCleanup(w: PlannedWorkflow, after: OpRow[], v: Tally, notes: Tally, sample: () => unknown): void {
  const want = cleanupOps(w.input.cleanupSteps ?? 0);
  const got = after.map(opLine);
  const steps = got.filter((k) => k.startsWith('step:'));
  if (new Set(steps).size < steps.length) v.add('cleanup_step_recorded_twice', sample);
  else if (got.join(',') === want.join(',')) notes.add('cleanup_completed');
  else if (got.length < want.length && want.slice(0, got.length).join(',') === got.join(',')) v.add('cleanup_incomplete', sample);
  else v.add('cleanup_out_of_order', () => ({ expected: want, ...(sample() as object) }));
}

export interface CancelCheckOptions {
  /** How long a stored cancel may take to reach its owner on a healthy system (NOTIFY, else the owner-side poll). */
  deliveryMs: number;
  /** A request stored this close (ms) to a claim's acquisition may have been invisible to the load that followed it. */
  commitSlackMs?: number;
}

/**
 * No cancel lost: every cancel the client saw acknowledged (`engine.cancel` resolved) either ended
 * its workflow `cancelled` (checkCleanups judges the cleanup), or came too late: the code ran to its
 * end before it waited again, so the end stands and the request stays unconsumed (the anomaly
 * `cancel_requested_as_it_ended`, checkMessages). A completed (or failed) workflow whose request
 * is not stored is `cancel_acknowledged_but_not_stored`. It came too late only if no step body of
 * the workflow began where the cancel should have been applied (a body is its code waiting):
 * `cancel_lost:loaded_after_it` when a body ran under a claim (or lease) its engine acquired after
 * the request was stored (that engine loaded the run with the request in it), `cancel_lost` when a
 * step's first attempt began more than `deliveryMs` after it, with no engine paused and no
 * PostgreSQL outage in between (either delays delivery: counted under
 * `cancel_late_excused:<fault>`).
 */
export function checkCancelsKept(
  plan: PlannedWorkflow[],
  d: RunData,
  cancels: Map<string, CancelOutcome>,
  windows: FaultWindows,
  o: CancelCheckOptions,
  v: Tally,
  notes: Tally,
): void {
  const msgs = groupBy(
    d.messages.filter((m) => m.kind === 'cancel'),
    (m) => m.workflow_id,
  );
  const bodies = groupBy(d.ledger, (l) => l.workflow_id);
  for (const w of plan) {
    const status = d.workflows.get(w.id)?.status ?? '';
    if (w.shape !== 'cancelcleanup' || cancels.get(w.id)?.outcome !== 'cancelled' || !TERMINAL.has(status)) continue;
    notes.add(`cancel_acknowledged:${status}`);
    if (status === 'cancelled') continue;
    const stored = (msgs.get(w.id) ?? []).filter((m) => m.consumed_seq === null);
    if (!stored.length) {
      v.add('cancel_acknowledged_but_not_stored', () => ({ workflowId: w.id, status, story: story(d, w.id, 30) }));
      continue;
    }
    const at = Math.min(...stored.map((m) => m.created_ms));
    judgeLateCancel(d, w.id, at, bodies.get(w.id) ?? [], windows, o, v, notes);
  }
}

function judgeLateCancel(
  d: RunData,
  id: string,
  at: number,
  bodies: LedgerRow[],
  windows: FaultWindows,
  o: CancelCheckOptions,
  v: Tally,
  notes: Tally,
): void {
  const slack = o.commitSlackMs ?? 250;
  const sample = (b: LedgerRow, why: string) => () => ({
    workflowId: id,
    why,
    cancelStored: iso(at),
    body: { seq: b.seq, attempt: b.attempt, engine: b.engine, started: iso(b.started_ms), stepStarted: iso(b.step_started_ms) },
    story: story(d, id, 30),
  });
  const loaded = bodies.find((b) => (acquiredAt(d, b) ?? -Infinity) > at + slack);
  if (loaded) {
    v.add('cancel_lost:loaded_after_it', sample(loaded, 'its engine loaded the run after the request was stored'));
    return;
  }
  const late = bodies.find((b) => b.step_started_ms > at + o.deliveryMs);
  if (!late) return;
  const pause = windows.pauses.find((p) => p.from <= late.step_started_ms && p.to >= at);
  const outage = windows.pgDown.find((p) => p.from <= late.step_started_ms && p.to >= at);
  if (pause || outage) notes.add(`cancel_late_excused:${pause ? 'engine-paused' : 'postgres-outage'}`);
  else v.add('cancel_lost', sample(late, `a step began ${Math.round(late.step_started_ms - at)} ms after the request was stored`));
}

/** When the claim epoch (under 'lease': the lease epoch) a body's ledger row saw was acquired by the body's engine. */
function acquiredAt(d: RunData, b: LedgerRow): number | null {
  if (b.claim_engine !== b.engine || b.claim_epoch === null) return null;
  const key = d.ownership === 'lease' ? LEASE_ID : b.workflow_id;
  const acq = d.claimAudit.find((c) => c.workflow_id === key && c.new_epoch === b.claim_epoch && c.new_engine === b.engine);
  return acq?.at_ms ?? null;
}

/**
 * Progress never goes backwards past a recorded heartbeat: a heartbeating step's body (its ledger
 * row says after which chunk it resumed) is not behind any heartbeat saved (weft_step_progress,
 * audited) before its engine acquired the claim it ran under (that engine loaded the run, and its
 * progress, after that), nor behind one its own engine saved before the body began (its memory
 * holds at least that). `heartbeat_progress_lost` otherwise. Bodies whose row saw another
 * engine's claim (deposed by then) are not judged. Resumes are counted under
 * `heartbeat_resumed:{from_start,from_heartbeat}`.
 */
export function checkHeartbeats(d: RunData, v: Tally, notes: Tally, commitSlackMs = 250): void {
  const saved = groupBy(d.progressAudit, (p) => `${p.workflow_id}#${p.seq}`);
  for (const b of d.ledger) {
    const from = b.progress_from;
    if (from === null) continue;
    notes.add(`heartbeat_resumed:${from < 0 ? 'from_start' : 'from_heartbeat'}`);
    const t = acquiredAt(d, b);
    if (t === null) continue;
    const before = (saved.get(`${b.workflow_id}#${b.seq}`) ?? []).filter(
      (p) =>
        p.done !== null && (p.at_ms < t - commitSlackMs || (p.writer === `weft:${b.engine}` && p.at_ms >= t && p.at_ms < b.started_ms)),
    );
    const behind = before.filter((p) => p.done! > from);
    if (behind.length) v.add('heartbeat_progress_lost', () => heartbeatSample(d, b, t, behind));
  }
}

function heartbeatSample(d: RunData, b: LedgerRow, acquired: number, behind: ProgressAuditRow[]): unknown {
  return {
    workflowId: b.workflow_id,
    seq: b.seq,
    body: { engine: b.engine, attempt: b.attempt, started: iso(b.started_ms), resumedAfterChunk: b.progress_from },
    claimAcquired: iso(acquired),
    savedBefore: behind.map((p) => ({ done: p.done, attempt: p.attempt, writer: p.writer, at: iso(p.at_ms) })),
    story: story(d, b.workflow_id, 30),
  };
}

/** What the summary reports of the shape: workflows, cancels, cleanups completed, and faults that hit a cleanup. */
export function cleanupStats(plan: PlannedWorkflow[], d: RunData, cancels: Map<string, CancelOutcome>, windows: FaultWindows) {
  const ids = plan.filter((w) => w.shape === 'cancelcleanup').map((w) => w.id);
  const byEndStatus = new Tally(0);
  const faultsDuringCleanup = new Tally(0);
  let cleanupsCompleted = 0;
  for (const id of ids) {
    const status = d.workflows.get(id)?.status ?? 'missing';
    byEndStatus.add(status);
    const span = cleanupSpan(d, id);
    if (!span) continue;
    if (status === 'cancelled') cleanupsCompleted++;
    for (const f of faultsIn(span, windows)) faultsDuringCleanup.add(f);
  }
  const clientOutcomes = new Tally(0);
  for (const c of cancels.values()) clientOutcomes.add(c.outcome);
  return {
    workflows: ids.length,
    cancels: clientOutcomes.counts,
    byEndStatus: byEndStatus.counts,
    cleanupsCompleted,
    faultsDuringCleanup: faultsDuringCleanup.counts,
    /** Heartbeats the engines saved (all shapes: only this one heartbeats). */
    heartbeatsSaved: d.progressAudit.length,
  };
}

/** The faults in a cleanup's span: of an engine that ran part of it, or PostgreSQL restarts. */
function faultsIn(span: { from: number; to: number; engines: string[] }, w: FaultWindows): string[] {
  const ran = new Set(span.engines);
  const within = (t: number) => t >= span.from && t <= span.to;
  const overlaps = (p: { from: number; to: number }) => p.from <= span.to && p.to >= span.from;
  return [
    ...w.kills.filter((k) => within(k.at) && ran.has(k.engineId)).map((k) => (k.crash ? 'crash' : 'sigkill')),
    ...w.gracefulStops.filter((g) => within(g.from) && ran.has(g.engineId)).map(() => 'sigterm'),
    ...w.pauses.filter((p) => overlaps(p) && ran.has(p.engineId)).map(() => 'sigstop'),
    ...w.pgDown.filter(overlaps).map(() => 'pg-restart'),
  ];
}

/** From the commit that recorded the cancel to the workflow's end (or the last cleanup body), and the engines that ran it. */
function cleanupSpan(d: RunData, id: string): { from: number; to: number; engines: string[] } | null {
  const ops = d.ops.get(id) ?? [];
  const cancel = ops.find((o) => o.kind === 'cancelRequested');
  if (!cancel) return null;
  const writes = d.wfAudit.filter((a) => a.workflow_id === id);
  const recorded = writes.find((a) => (d.opsByTx.get(`${a.txid}#${id}`) ?? []).includes(`${cancel.seq}:cancelRequested:${cancel.name}`));
  const cleanup = d.ledger.filter((l) => l.workflow_id === id && l.seq > cancel.seq);
  const from = recorded?.at_ms ?? Math.min(...cleanup.map((l) => l.started_ms));
  const end = writes.find((a) => TERMINAL.has(a.new_status) && a.old_status !== a.new_status);
  const to = end?.at_ms ?? Math.max(from, ...cleanup.map((l) => l.at_ms));
  const engines = [...new Set([...cleanup.map((l) => l.engine), ...writes.filter((a) => a.at_ms >= from).map((a) => a.writer.slice(5))])];
  return Number.isFinite(from) ? { from, to, engines } : null;
}
