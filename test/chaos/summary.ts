// The JSON summary a chaos run prints: workflows, faults injected by kind, violations by kind,
// failover times, and how the engines fared.
import { cleanupStats } from './checks-cleanup.js';
import { faultWindows, type CheckResults } from './checks.js';
import type { RunData } from './data.js';
import type { Driver } from './driver.js';
import type { Fleet } from './engines.js';
import type { FaultRecord } from './faults.js';
import type { failoverTimes, pgRecovery } from './metrics.js';
import type { ChaosProfile } from './profiles.js';
import type { diagnoseStuck } from './stuck.js';
import type { StallReport } from './watchdog.js';
import type { PlannedWorkflow } from './workload.js';

export interface SummaryInput {
  profile: ChaosProfile;
  plan: PlannedWorkflow[];
  data: RunData;
  checks: CheckResults;
  faults: FaultRecord[];
  fleet: Fleet;
  driver: Driver;
  stuck: Awaited<ReturnType<typeof diagnoseStuck>>;
  shutdown: { graceful: string[]; forced: string[] };
  endReason: string;
  /** The unfinished workflows when the run ended without all of them (watchdog.ts). */
  stall: StallReport | null;
  workloadMs: number;
  totalMs: number;
  failover: Awaited<ReturnType<typeof failoverTimes>>;
  pgRecovery: Awaited<ReturnType<typeof pgRecovery>>;
}

export type ChaosSummary = ReturnType<typeof buildSummary>;

function countBy<T>(items: T[], key: (t: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const i of items) out[key(i)] = (out[key(i)] ?? 0) + 1;
  return out;
}

function workflows(s: SummaryInput) {
  const rows = [...s.data.workflows.values()];
  return {
    planned: s.plan.length,
    startedByClient: s.driver.started.size,
    children: s.plan.filter((w) => w.parentId !== null).length,
    byShape: countBy(s.plan, (w) => w.shape),
    byStatus: countBy(rows, (w) => w.status),
    completedAsExpected:
      s.plan.length -
      (s.checks.violations.counts.wrong_output ?? 0) -
      s.plan.filter((w) => s.data.workflows.get(w.id)?.status !== 'completed').length,
    endReason: s.endReason,
  };
}

function faultSection(s: SummaryInput) {
  const injected = s.faults.filter((f) => !f.skipped);
  const ends = [...s.data.workflows.values()].map((w) => w.completed_ms ?? Infinity);
  const workloadEndedAt = ends.length ? Math.max(...ends) : 0;
  return {
    injected: countBy(injected, (f) => f.kind),
    /** Faults injected after the last workflow ended (must be 0: the workload's tail waits for them). */
    afterWorkloadEnded: injected.filter((f) => f.at > workloadEndedAt).length,
    tailReleasedAt: s.driver.tailReleasedAt === null ? null : new Date(s.driver.tailReleasedAt).toISOString(),
    skipped: countBy(
      s.faults.filter((f) => f.skipped),
      (f) => f.kind,
    ),
    timeline: s.faults.map((f) => ({
      kind: f.kind,
      at: new Date(f.at).toISOString(),
      ms: f.endedAt ? f.endedAt - f.at : undefined,
      engineId: f.engineId,
      skipped: f.skipped,
      ...f.detail,
    })),
  };
}

function engineSection(s: SummaryInput) {
  const crashes = s.faults.filter((f) => f.kind === 'engine-crash');
  const pgWindows = s.faults.filter((f) => f.kind.startsWith('pg-') && !f.skipped);
  const crashedAroundPg = crashes.filter((c) => pgWindows.some((p) => c.at >= p.at && c.at <= (p.endedAt ?? Infinity) + 30_000));
  return {
    slots: s.profile.engines,
    incarnations: s.fleet.all.map((e) => ({ engineId: e.engineId, pid: e.pid, startAttempts: e.startAttempts, state: e.state })),
    crashes: crashes.map((c) => ({ engineId: c.engineId, at: new Date(c.at).toISOString(), ...c.detail })),
    survivedPostgresRestarts: crashedAroundPg.length === 0,
    startupsThatRetriedWhileDatabaseDown: s.fleet.all.filter((e) => e.startAttempts > 1).length,
    shutdownAtEnd: s.shutdown,
    processEvents: s.fleet.events.counts,
    processEventSamples: s.fleet.events.samples,
    stderr: s.fleet.logs.counts,
    stderrSamples: s.fleet.logs.samples,
  };
}

/** How the client-side shapes of issue #12 came out (cancel races, expiring updates, suspend/resume, delayed starts). */
function shapeSection(s: SummaryInput) {
  const status = (id: string) => s.data.workflows.get(id)?.status ?? 'missing';
  const cancels = [...s.driver.cancels.entries()];
  const expiring = [...s.driver.expiring.values()].flat();
  const suspends = [...s.driver.suspends.values()];
  const resumeErrors: Record<string, number> = {};
  for (const r of suspends) for (const [k, n] of Object.entries(r.resumeErrors)) resumeErrors[k] = (resumeErrors[k] ?? 0) + n;
  const delayed = [...s.driver.delayed.values()];
  return {
    cancelRace: {
      byClientOutcome: countBy(cancels, ([, c]) => c.outcome),
      byEndStatus: countBy(cancels, ([id]) => status(id)),
    },
    expiringUpdates: countBy(expiring, (e) => `${e.outcome}${e.fromDb ? ':from_db' : ''}`),
    suspendResume: {
      suspended: suspends.filter((r) => r.suspended).length,
      suspendRefused: suspends.filter((r) => r.suspendRefused).length,
      resumed: suspends.filter((r) => r.resumed).length,
      resumeErrors,
    },
    delayedStarts: { total: delayed.length, aimedAtAFault: delayed.filter((d) => d.aimed).length },
    ...edgeShapes(s, status),
  };
}

/** Issue #32's shapes: chains' messages, busy cancels, purged and reused ids, spawned workflows. */
function edgeShapes(s: SummaryInput, status: (id: string) => string) {
  const sends = [...s.driver.chains.values()].flat();
  const busy = [...s.driver.busyCancels.entries()];
  const reuses = [...s.driver.reuses.values()];
  const spawners = s.plan.filter((w) => w.shape === 'spawner').map((w) => w.id);
  return {
    chains: {
      byEndStatus: countBy([...s.driver.chains.keys()], status),
      messages: countBy(sends, (m) => `${m.kind}:${m.acked ? 'acknowledged' : 'unacknowledged'}`),
      sentMoreThanOnce: sends.filter((m) => m.attempts > 1).length,
    },
    busyCancel: { byClientOutcome: countBy(busy, ([, c]) => c.outcome), byEndStatus: countBy(busy, ([id]) => status(id)) },
    reuse: {
      purged: reuses.filter((r) => r.purged).length,
      startedAgain: reuses.filter((r) => r.secondStarted).length,
      purgeAttempts: reuses.reduce((a, r) => a + r.purgeAttempts, 0),
    },
    spawner: { byEndStatus: countBy(spawners, status), spawnedByEndStatus: countBy(spawners, (id) => status(`${id}.spawned`)) },
    cancelCleanup: cleanupStats(s.plan, s.data, s.driver.cleanupCancels, faultWindows(s.faults, s.fleet.exits)),
  };
}

export function buildSummary(s: SummaryInput) {
  const c = s.checks;
  return {
    profile: s.profile.name,
    seed: s.profile.seed,
    config: {
      engines: s.profile.engines,
      ownership: s.profile.ownership,
      claimTtlMs: s.profile.ttlMs,
      claimRenewMs: s.profile.renewMs,
      shutdownGraceMs: s.profile.shutdownGraceMs,
      skipTypes: s.profile.skipTypes ?? null,
      workload: s.profile.workload,
    },
    durationMs: { total: s.totalMs, workload: s.workloadMs },
    workflows: workflows(s),
    steps: {
      recorded: c.stepsRecorded,
      bodyRuns: c.stepBodiesRun,
      reruns: c.stepReruns,
      notes: c.notes.counts,
    },
    shapes: shapeSection(s),
    audit: c.audit,
    client: { calls: s.driver.calls.counts, errors: s.driver.callErrors.counts, errorSamples: s.driver.callErrors.samples },
    faults: faultSection(s),
    failover: s.failover,
    postgresRecovery: s.pgRecovery,
    engines: engineSection(s),
    violations: { total: c.violations.total, byKind: c.violations.counts, samples: c.violations.samples },
    anomalies: { total: c.anomalies.total, byKind: c.anomalies.counts, samples: c.anomalies.samples },
    stuck: s.stuck,
    stall: s.stall,
    resultsFile: null as string | null,
  };
}
