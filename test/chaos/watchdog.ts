// The stall watchdog. Faults 'until done' go on until every workflow finished, so a workflow that
// nobody will finish (a resume given up on, a start waiting for an engine that never comes) kept
// the soak faulting forever and checking nothing. When no workflow changed status and no operation
// was recorded for stallWatchMs while faults ran, the run stops its faults, dumps the unfinished
// workflows with the client's record of each, and ends as a failure (violation `run_stalled`).
import type { HarnessDb } from './db.js';
import type { Driver } from './driver.js';
import type { EngineProc } from './engines.js';
import type { PlannedWorkflow } from './workload.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled', 'timed_out']);

export interface StallState {
  now: number;
  /** When a workflow last changed (inserted, changed status) or an operation was recorded. */
  lastProgressAt: number;
  /** The scheduled faults are still being injected (or waited for). */
  faultsRunning: boolean;
  /** The start loop holds the last starts until the faults are over: quiet then is expected. */
  waitingForTail: boolean;
  stallWatchMs: number;
}

/** A stall: nothing moved for stallWatchMs while faults ran (and the quiet is not the held-back tail's). */
export function isStalled(s: StallState): boolean {
  return s.faultsRunning && !s.waitingForTail && s.now - s.lastProgressAt > s.stallWatchMs;
}

export interface StalledWorkflow {
  workflowId: string;
  shape: string;
  parentId: string | null;
  /** Its status in the database, or 'not started' when it has no row. */
  status: string;
  /** The client's record of it (a child's is its parent's script). */
  client: {
    scriptRunning: boolean;
    startAcknowledged: boolean;
    phase: string | null;
    phaseForMs: number | null;
    suspend?: unknown;
    cancel?: unknown;
    recentCalls: Array<{ at: string; what: string }>;
  };
}

export interface StallReport {
  at: string;
  quietMs: number;
  /** Planned workflows not in a terminal status (no row counts as 'not started'). */
  unfinished: number;
  byShapeAndStatus: Record<string, number>;
  /** What the unfinished ones' client scripts are doing, counted. */
  byClientPhase: Record<string, number>;
  samples: StalledWorkflow[];
  client: { callsInFlight: number; startAcknowledged: number; scriptsRunning: number };
  engines: Array<{
    engineId: string;
    pid: number;
    state: string;
    readyAt: string | null;
    leaseLostAt: string | null;
    pendingCalls: number;
    stderrTail: string[];
  }>;
  /** Ownership 'lease': the global lease row as the database has it. */
  lease: { holder: string | null; epoch: string; expiresInMs: number | null } | null;
  /** How long ago the progress monitor last read the database (a monitor that cannot sees no progress). */
  monitorLastPollAgoMs: number | null;
  /** The database could not be read for the dump: statuses are unknown (every workflow shows as not started). */
  statusesUnread?: string;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Strips what varies per call (engine ids, attempts, durations) so phases can be counted. */
function phaseClass(phase: string | null): string {
  if (phase === null) return 'no client record';
  return phase
    .replace(/\b[A-J]\d+\b/g, 'E')
    .replace(/\d+ ms/g, 'N ms')
    .replace(/attempt \d+/g, 'attempt N')
    .slice(0, 160);
}

function clientRecord(driver: Driver, w: PlannedWorkflow, now: number): StalledWorkflow['client'] {
  const scriptId = w.parentId ?? w.startedBy ?? w.id;
  const phase = driver.phases.get(scriptId) ?? null;
  return {
    scriptRunning: driver.scriptsRunning.has(scriptId),
    startAcknowledged: driver.started.has(w.id),
    phase: phase?.what ?? null,
    phaseForMs: phase ? now - phase.since : null,
    ...(driver.suspends.has(w.id) ? { suspend: driver.suspends.get(w.id) } : {}),
    ...(driver.cancels.has(w.id) ? { cancel: driver.cancels.get(w.id) } : {}),
    recentCalls: (driver.recentCalls.get(w.id) ?? []).map((c) => ({ at: new Date(c.at).toISOString(), what: c.what })),
  };
}

/** The dump: every unfinished planned workflow counted, the first `limit` in full, the engines and the lease. */
export function buildStallReport(input: {
  plan: PlannedWorkflow[];
  statuses: Map<string, string>;
  driver: Driver;
  engines: EngineProc[];
  lease: StallReport['lease'];
  quietMs: number;
  monitorLastPollAgoMs?: number | null;
  statusesUnread?: string;
  now?: number;
  limit?: number;
}): StallReport {
  const now = input.now ?? Date.now();
  const unfinished = input.plan.filter((w) => !TERMINAL.has(input.statuses.get(w.id) ?? 'not started'));
  const byShapeAndStatus: Record<string, number> = {};
  const byClientPhase: Record<string, number> = {};
  const samples: StalledWorkflow[] = [];
  for (const w of unfinished) {
    const status = input.statuses.get(w.id) ?? 'not started';
    const client = clientRecord(input.driver, w, now);
    byShapeAndStatus[`${w.shape}:${status}`] = (byShapeAndStatus[`${w.shape}:${status}`] ?? 0) + 1;
    byClientPhase[phaseClass(client.phase)] = (byClientPhase[phaseClass(client.phase)] ?? 0) + 1;
    if (samples.length < (input.limit ?? 40)) samples.push({ workflowId: w.id, shape: w.shape, parentId: w.parentId, status, client });
  }
  return {
    at: new Date(now).toISOString(),
    quietMs: input.quietMs,
    unfinished: unfinished.length,
    byShapeAndStatus,
    byClientPhase,
    samples,
    client: {
      callsInFlight: input.driver.callsInFlight,
      startAcknowledged: input.driver.started.size,
      scriptsRunning: input.driver.scriptsRunning.size,
    },
    engines: input.engines.map((e) => ({
      engineId: e.engineId,
      pid: e.pid,
      state: e.state,
      readyAt: iso(e.readyAt),
      leaseLostAt: iso(e.leaseLostAt),
      pendingCalls: e.pendingCalls,
      stderrTail: e.stderrTail(3),
    })),
    lease: input.lease,
    monitorLastPollAgoMs: input.monitorLastPollAgoMs ?? null,
    ...(input.statusesUnread ? { statusesUnread: input.statusesUnread } : {}),
  };
}

/** One line for the log and the end reason. */
export function describeStall(r: StallReport): string {
  const top = (o: Record<string, number>) =>
    Object.entries(o)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 6)
      .map(([k, n]) => `${k} x${n}`)
      .join(', ');
  return (
    `stalled: no workflow changed status and no operation was recorded for ${Math.round(r.quietMs / 1000)} s while faults ran; ` +
    `faults stopped; ${r.unfinished} planned workflows unfinished (${top(r.byShapeAndStatus)}); ` +
    `their clients: ${top(r.byClientPhase)}; the summary's 'stall' lists them`
  );
}

/** The dump for the log: engines, lease, client, then one line per sampled workflow. */
export function stallLines(r: StallReport): string[] {
  const engines = r.engines.map((e) => `${e.engineId}=${e.state}`).join(' ');
  const lease = r.lease ? ` lease: ${r.lease.holder ?? 'free'} epoch ${r.lease.epoch} expires in ${r.lease.expiresInMs} ms;` : '';
  const monitor = `monitor polled ${r.monitorLastPollAgoMs ?? '?'} ms ago${r.statusesUnread ? ` (statuses unread: ${r.statusesUnread})` : ''}`;
  const head = `${r.unfinished} unfinished; engines: ${engines};${lease} ${monitor}; client: ${JSON.stringify(r.client)}; phases: ${JSON.stringify(r.byClientPhase)}`;
  return [
    head,
    ...r.samples.map((w) => {
      const c = w.client;
      const calls = c.recentCalls.map((x) => `${x.at.slice(11, 23)} ${x.what}`).join(' | ');
      return `  ${w.workflowId} ${w.shape} ${w.status}: ${c.phase ?? 'no client record'} (${c.phaseForMs ?? '-'} ms); last calls: ${calls || 'none'}`;
    }),
  ];
}

/** The statuses of the workflows in the database and, under 'lease', the lease row. */
export async function readStallState(
  db: HarnessDb,
  weft: string,
  ownership: string,
): Promise<{ statuses: Map<string, string>; lease: StallReport['lease'] }> {
  const rows = await db.query<{ id: string; status: string }>(`SELECT id, status FROM ${weft}.weft_workflows`);
  const statuses = new Map(rows.map((r) => [r.id, r.status]));
  if (ownership !== 'lease') return { statuses, lease: null };
  const [l] = await db.query<{ holder: string | null; epoch: string; expires_in: number | null }>(
    `SELECT holder, epoch::text, (extract(epoch from expires_at - clock_timestamp()) * 1000)::float8 AS expires_in
     FROM ${weft}.weft_global_lease`,
  );
  const lease = l ? { holder: l.holder, epoch: l.epoch, expiresInMs: l.expires_in === null ? null : Math.round(l.expires_in) } : null;
  return { statuses, lease };
}
