// Safety invariants from the side-effect ledger and the audit triggers: step bodies against
// recorded results, writers against claim epochs, epochs against their history.
import { groupBy, type LedgerRow, type RunData, type WfAuditRow } from './data.js';
import { LEASE_ID } from './schema.js';
import { Tally } from './util.js';

/** When the harness paused, killed or cut off what (harness clock, same host as the database). */
export interface FaultWindows {
  pauses: Array<{ engineId: string; pid: number; from: number; to: number }>;
  kills: Array<{ engineId: string; at: number; crash: boolean }>;
  pgDown: Array<{ from: number; to: number }>;
  /**
   * SIGTERMs: from the signal to the process's exit; `forced` when it had to be SIGKILLed;
   * `stoppingAt` when the worker itself began to stop (its 'disposed' event), if it said.
   */
  gracefulStops: Array<{ engineId: string; pid: number; from: number; to: number; forced: boolean; stoppingAt?: number }>;
  /** Ownership 'lease': when an engine reported losing the lease. */
  leaseLost: Array<{ engineId: string; at: number }>;
  /** Suspends and cancels committed (from the audit), for explaining re-runs. */
  stops?: Array<{ workflowId: string; at: number }>;
}

/**
 * A suspend or cancel of the workflow committed in [from - ttlMs, to]: it deposed the engine that
 * ran a body in that window (an owner learns of the rotation at its next fenced write or renewal,
 * so a body may still start up to a TTL after it).
 */
export const stoppedWithin = (w: FaultWindows, workflowId: string, from: number, to: number, ttlMs: number): boolean =>
  !!w.stops?.some((s) => s.workflowId === workflowId && s.at >= from - ttlMs && s.at <= to);

const engineOf = (writer: string) => (writer.startsWith('weft:') ? writer.slice(5) : null);

/**
 * No step body ran after its result was recorded, except the documented windows (DESIGN §6: a
 * body runs again only if its engine crashed, stalled past the TTL or lost its claim first): a
 * step that was in flight on an engine when it was paused (its retry loop started before SIGSTOP,
 * the body wrote after it), and one whose engine was deposed by a suspend or cancel committed
 * elsewhere while the step was in flight or up to a TTL before it started (the owner learns of
 * the rotation at its next fenced write or renewal, while the resumed run may already have
 * recorded the step), and one in flight across a PostgreSQL outage longer than the TTL (no
 * renewal could pass, so the claim expired under it). Bodies in flight across a shorter outage
 * are reported under their own kind (the claim must outlive it); anything else is
 * `step_ran_after_result_recorded`.
 */
export function checkLedger(d: RunData, w: FaultWindows, v: Tally, notes: Tally, ttlMs = 0): void {
  for (const row of d.ledger) {
    if (!row.op_recorded) continue;
    const pause = w.pauses.find((p) => p.pid === row.pid && row.step_started_ms < p.to && row.at_ms >= p.from);
    if (pause) {
      const kind = row.started_ms < pause.to ? 'excused_paused_in_flight' : 'excused_paused_in_flight_retry_attempt';
      notes.add(`body_after_result_recorded:${kind}`);
      continue;
    }
    if (stoppedWithin(w, row.workflow_id, row.step_started_ms, row.at_ms, ttlMs)) {
      notes.add('body_after_result_recorded:excused_deposed_by_suspend_or_cancel');
      continue;
    }
    const outage = w.pgDown.find((p) => row.step_started_ms < p.to && row.started_ms >= p.from);
    if (outage && outage.to - outage.from > ttlMs) {
      // Cut off from the database longer than the TTL, the engine could not renew: its claim
      // expired under a body it had started while the claim was still valid, as across a pause.
      notes.add('body_after_result_recorded:excused_in_flight_across_postgres_restart_past_ttl');
      continue;
    }
    const kind = outage ? 'step_ran_after_result_recorded:in_flight_across_postgres_restart' : 'step_ran_after_result_recorded';
    v.add(kind, () => ({ ...brief(row), context: context(row, w), story: story(d, row.workflow_id) }));
  }
}

const brief = (r: LedgerRow) => ({
  workflowId: r.workflow_id,
  seq: r.seq,
  attempt: r.attempt,
  engine: r.engine,
  pid: r.pid,
  stepStarted: new Date(r.step_started_ms).toISOString(),
  bodyStarted: new Date(r.started_ms).toISOString(),
  wroteAt: new Date(r.at_ms).toISOString(),
  claimAtWrite: { epoch: r.claim_epoch, engine: r.claim_engine, live: r.claim_live },
});

/** Faults near a ledger row, to make a violation report self-explanatory. */
function context(r: LedgerRow, w: FaultWindows): unknown {
  const near = (t: number) => t >= r.started_ms - 30_000 && t <= r.at_ms + 1000;
  return {
    pauses: w.pauses.filter((p) => near(p.from) || near(p.to)).map((p) => ({ ...p, from: iso(p.from), to: iso(p.to) })),
    pgDown: w.pgDown.filter((p) => near(p.from) || near(p.to)).map((p) => ({ from: iso(p.from), to: iso(p.to) })),
    kills: w.kills.filter((k) => near(k.at)).map((k) => ({ ...k, at: iso(k.at) })),
  };
}

const iso = (t: number) => new Date(t).toISOString();

const claimLine = (c: RunData['claimAudit'][number]) =>
  `claim ${c.tg_op} epoch ${c.old_epoch ?? '-'}->${c.new_epoch} holder ${c.old_engine ?? '-'}->${c.new_engine ?? '-'} by ${c.writer}`;
const writeLine = (d: RunData, a: RunData['wfAudit'][number]) =>
  `write v${a.old_version ?? '-'}->v${a.new_version} ${a.new_status} by ${a.writer} under epoch ${a.claim_epoch} [${(d.opsByTx.get(`${a.txid}#${a.workflow_id}`) ?? []).join(' ')}]`;
const ledgerLine = (l: LedgerRow) =>
  `body seq ${l.seq} ledgered by ${l.engine} (claim epoch ${l.claim_epoch} ${l.claim_engine}${l.claim_live ? '' : ' expired'}; already recorded: ${l.op_recorded})`;

/** A workflow's claim changes, writes, step bodies and client calls in time order, for violation reports. */
export function story(d: RunData, workflowId: string, max = 40): string[] {
  const mine = <T extends { workflow_id: string }>(rows: T[]) => rows.filter((r) => r.workflow_id === workflowId);
  const lines: Array<[number, string]> = [
    ...mine(d.claimAudit).map((c): [number, string] => [c.at_ms, claimLine(c)]),
    ...mine(d.wfAudit).map((a): [number, string] => [a.at_ms, writeLine(d, a)]),
    ...mine(d.ledger).flatMap((l): Array<[number, string]> => [
      [l.started_ms, `body seq ${l.seq} attempt ${l.attempt} started on ${l.engine}`],
      [l.at_ms, ledgerLine(l)],
    ]),
    ...(d.clientLog.get(workflowId) ?? []).map((c): [number, string] => [c.at, `client: ${c.what}`]),
  ];
  // Under 'lease': the lease's changes while this workflow was alive (the run's others would crowd it out).
  if (d.ownership === 'lease' && lines.length) {
    const from = Math.min(...lines.map((l) => l[0])) - 5000;
    const to = Math.max(...lines.map((l) => l[0])) + 1000;
    const lease = d.claimAudit.filter((c) => c.workflow_id === LEASE_ID && c.at_ms >= from && c.at_ms <= to);
    lines.push(...lease.map((c): [number, string] => [c.at_ms, `lease ${claimLine(c).slice(6)}`]));
  }
  return lines
    .sort((a, b) => a[0] - b[0])
    .slice(-max)
    .map(([t, m]) => `${iso(t)} ${m}`);
}

/**
 * Why a step body ran again (for the summary); "unexplained" ones are anomalies. `ttlMs`: a
 * suspend or cancel committed by another engine up to a TTL before a body started explains its
 * re-run too (the engine learns of the rotation at its next fenced write), as checkFinishedReruns
 * judges it.
 */
export function classifyReruns(d: RunData, w: FaultWindows, notes: Tally, anomalies: Tally, ttlMs = 0): number {
  let reruns = 0;
  for (const unordered of groupBy(d.ledger, (l) => `${l.workflow_id}#${l.seq}`).values()) {
    // In the order the bodies STARTED: a paused engine's body may write after a later one.
    const runs = [...unordered].sort((a, b) => a.started_ms - b.started_ms);
    for (let i = 1; i < runs.length; i++) {
      reruns++;
      const cause = rerunCause(runs[i - 1], runs[i], w, ttlMs);
      notes.add(`step_rerun:${cause}`);
      if (cause === 'unexplained') anomalies.add('step_rerun_unexplained', { previous: brief(runs[i - 1]), rerun: brief(runs[i]) });
    }
  }
  return reruns;
}

function rerunCause(prev: LedgerRow, next: LedgerRow, w: FaultWindows, ttlMs: number): string {
  const kill = w.kills.find((k) => k.engineId === prev.engine && k.at >= prev.started_ms);
  if (kill) return kill.crash ? 'engine-crashed' : 'engine-killed';
  // A body may start after the signal was sent and before the worker turned to it: the engine
  // learns of the stop when the worker does (stoppingAt).
  const stopSeen = (g: FaultWindows['gracefulStops'][number]) => Math.max(g.from, g.stoppingAt ?? g.from);
  if (w.gracefulStops.some((g) => g.engineId === prev.engine && stopSeen(g) >= prev.started_ms && g.from <= next.started_ms))
    return 'engine-stopped-gracefully';
  if (w.leaseLost.some((l) => l.engineId === prev.engine && l.at >= prev.started_ms && l.at <= next.started_ms)) return 'lease-lost';
  if (w.pauses.some((p) => p.engineId === prev.engine && p.to >= prev.started_ms && p.from <= next.started_ms)) return 'engine-paused';
  if (w.pgDown.some((p) => p.to >= prev.started_ms && p.from <= next.started_ms)) return 'postgres-restart';
  if (stoppedWithin(w, prev.workflow_id, prev.started_ms, next.started_ms, ttlMs)) return 'suspended-and-resumed';
  // A heartbeating body that never finished, retried by its engine: its heartbeat timeout ran out (a stall).
  if (prev.progress_from !== null && prev.finished_ms === null && next.engine === prev.engine && next.attempt > prev.attempt)
    return 'attempt-failed-and-retried';
  return 'unexplained';
}

/**
 * Claim history: epochs only grow, by exactly one per acquisition, each epoch acquired by one
 * engine, for itself; claim rows and recorded operations are never deleted or rewritten.
 */
export function checkEpochs(d: RunData, v: Tally): Map<string, string> {
  const acquirer = new Map<string, string>();
  for (const c of d.claimAudit) {
    if (c.tg_op === 'UPDATE' && c.old_epoch !== null) {
      const o = BigInt(c.old_epoch);
      const n = BigInt(c.new_epoch);
      if (n < o) v.add('epoch_regressed', c);
      else if (n > o + 1n) v.add('epoch_jumped', c);
    }
    const acquired = c.new_engine !== null && (c.tg_op === 'INSERT' || c.old_epoch !== c.new_epoch);
    if (!acquired) continue;
    if (engineOf(c.writer) !== c.new_engine) v.add('claim_acquired_for_another_engine', c);
    const key = `${c.workflow_id}#${c.new_epoch}`;
    const prev = acquirer.get(key);
    if (prev !== undefined && prev !== c.new_engine) v.add('two_engines_acquired_one_epoch', { ...c, first: prev });
    if (prev === undefined) acquirer.set(key, c.new_engine!);
  }
  for (const f of d.forbidden) v.add(f.what, f);
  return acquirer;
}

/**
 * Every advance of a workflow was written by the engine that acquired the claim epoch in force,
 * while no other engine held the claim: nothing a deposed engine wrote landed. Versions advance
 * one at a time.
 */
export function checkWriters(d: RunData, acquirer: Map<string, string>, v: Tally): void {
  // Under 'lease' every write is fenced by the one global lease, not by the workflow's claim.
  const key = (workflowId: string) => (d.ownership === 'lease' ? LEASE_ID : workflowId);
  const writers = new Map<string, Set<string>>();
  const lastVersion = new Map<string, number>();
  const lastStatus = new Map<string, string>();
  for (const a of d.wfAudit) {
    const prev = lastVersion.get(a.workflow_id);
    // An id inserted again after its run ended: purged and started anew ('reuse'), from version 1.
    const fresh = prev === undefined || TERMINAL.has(lastStatus.get(a.workflow_id) ?? '');
    const chained = a.tg_op === 'INSERT' ? fresh && a.new_version === 1 : a.old_version === prev && a.new_version === prev + 1;
    if (!chained) v.add('version_not_contiguous', { ...a, previous: prev });
    lastVersion.set(a.workflow_id, a.new_version);
    lastStatus.set(a.workflow_id, a.new_status);
    const engine = engineOf(a.writer);
    if (!engine) v.add('write_by_non_engine', a);
    else if (a.tg_op === 'UPDATE') checkFencedWrite(d, a, engine, acquirer, writers, v, key);
  }
}

function checkFencedWrite(
  d: RunData,
  a: WfAuditRow,
  engine: string,
  acquirer: Map<string, string>,
  writers: Map<string, Set<string>>,
  v: Tally,
  ownershipKey: (workflowId: string) => string,
): void {
  if (a.claim_epoch === null) return v.add('unfenced_write', a);
  // An external transition (cancel, suspend, timeout; a resume through an engine without the
  // type) may be committed by any engine and rotates the epoch in the same statement (docs/ownership.md):
  // the claim it leaves has no holder. A status change under a holder is checked as usual.
  if (a.old_status !== a.new_status && a.claim_engine === null && d.ownership !== 'lease') return;
  const key = `${ownershipKey(a.workflow_id)}#${a.claim_epoch}`;
  const acq = acquirer.get(key);
  if (acq === undefined) v.add('write_under_unacquired_epoch', a);
  else if (acq !== engine) v.add('deposed_write', { ...a, epochAcquiredBy: acq });
  if (a.claim_engine !== null && a.claim_engine !== engine) v.add('write_while_another_engine_holds_claim', a);
  const set = writers.get(key) ?? new Set<string>();
  const before = set.size;
  set.add(engine);
  writers.set(key, set);
  if (before === 1 && set.size === 2)
    v.add('two_engines_wrote_one_epoch', { workflowId: a.workflow_id, epoch: a.claim_epoch, engines: [...set] });
}

/**
 * Liveness: a running workflow whose consecutive writes are further apart than `limitMs` sat
 * idle (its waits in this workload are short, and failover takes a few seconds).
 */
export function checkIdleGaps(d: RunData, limitMs: number, anomalies: Tally, notes?: Tally): void {
  for (const [wf, rows] of groupBy(d.wfAudit, (a) => a.workflow_id)) {
    for (let i = 1; i < rows.length; i++) {
      const gap = rows[i].at_ms - rows[i - 1].at_ms;
      // Between an ended run and the same id started again after a purge nothing is running.
      if (gap <= limitMs || TERMINAL.has(rows[i - 1].new_status)) continue;
      const resumedBy = (d.opsByTx.get(`${rows[i].txid}#${wf}`) ?? ['-:none:-'])[0].split(':')[1];
      notes?.add(`idle_gap_ended_by:${resumedBy}:${Math.round(gap / 10_000) * 10}s`);
      anomalies.add('workflow_idle_too_long', () => ({
        workflowId: wf,
        idleMs: Math.round(gap),
        from: iso(rows[i - 1].at_ms),
        to: iso(rows[i].at_ms),
        writerBefore: rows[i - 1].writer,
        writerAfter: rows[i].writer,
        versionBefore: rows[i - 1].new_version,
        recordedBefore: d.opsByTx.get(`${rows[i - 1].txid}#${wf}`) ?? [],
        recordedAfter: d.opsByTx.get(`${rows[i].txid}#${wf}`) ?? [],
        statusAfter: rows[i].new_status,
        story: story(d, wf, 20),
      }));
    }
  }
}

/** The statuses that end a run. */
export const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'timed_out']);

/** Whether the workflow's last write at or before `at` ended its run. */
function endedBy(writes: WfAuditRow[] | undefined, at: number): boolean {
  let last: WfAuditRow | undefined;
  for (const r of writes ?? []) if (r.at_ms <= at) last = r;
  return last !== undefined && TERMINAL.has(last.new_status ?? '');
}

/**
 * Why each claim changed hands while its holder still held it (takeover): the holder was killed,
 * paused, or cut off by a PostgreSQL restart within the last `windowMs`; otherwise it was taken
 * from a live, running engine (its renewal fell behind): an anomaly, counted and sampled. A claim
 * row whose run had ended names a holder that holds nothing (docs/decisions/0011): taking it
 * (a delayed-start timer fired late, say) is noted as `run-ended`, not a takeover.
 */
export function classifyTakeovers(d: RunData, w: FaultWindows, windowMs: number, notes: Tally, anomalies: Tally): void {
  const writes = groupBy(d.wfAudit, (a) => a.workflow_id);
  for (const rows of writes.values()) rows.sort((a, b) => a.at_ms - b.at_ms);
  for (const c of d.claimAudit) {
    if (c.old_engine === null || c.new_engine === null || c.old_engine === c.new_engine) continue;
    const cause = endedBy(writes.get(c.workflow_id), c.at_ms) ? 'run-ended' : takeoverCause(c.old_engine, c.at_ms, w, windowMs);
    notes.add(`takeover:${cause}`);
    if (cause === 'holder-live')
      anomalies.add('claim_taken_from_live_engine', () => ({ ...c, at: iso(c.at_ms), story: story(d, c.workflow_id, 15) }));
  }
}

export function takeoverCause(holder: string, at: number, w: FaultWindows, windowMs: number): string {
  if (w.kills.some((k) => k.engineId === holder && k.at <= at)) return 'holder-killed';
  if (w.gracefulStops.some((g) => g.engineId === holder && g.from <= at)) return 'holder-stopped-gracefully';
  if (w.leaseLost.some((l) => l.engineId === holder && l.at <= at + windowMs)) return 'holder-lost-the-lease';
  if (w.pauses.some((p) => p.engineId === holder && p.from <= at && p.to + windowMs >= at)) return 'holder-paused';
  if (w.pgDown.some((p) => p.from <= at && p.to + windowMs >= at)) return 'postgres-restart';
  return 'holder-live';
}
