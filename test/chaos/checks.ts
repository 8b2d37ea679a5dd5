// Runs every invariant check over the data the run left behind.
import {
  story,
  checkEpochs,
  checkIdleGaps,
  checkLedger,
  checkWriters,
  classifyReruns,
  classifyTakeovers,
  type FaultWindows,
} from './checks-safety.js';
import { checkCancelsKept, checkCleanups, checkHeartbeats } from './checks-cleanup.js';
import { checkChains, expectedDeletes } from './checks-edges.js';
import { checkDelayedStarts, checkExpiringUpdates, checkFailures, checkFinishedReruns, checkStopWindows } from './checks-shapes.js';
import { checkEndState, checkHistories, checkMessages, checkOutcomes, checkUpdateResults } from './checks-state.js';
import { checkTxRows } from './checks-tx.js';
import { groupBy, type RunData } from './data.js';
import type { ChainSend } from './driver-edges.js';
import type { CancelOutcome, ExpiringOutcome } from './driver.js';
import type { ExitRecord } from './engines.js';
import type { FaultRecord } from './faults.js';
import { Tally } from './util.js';
import type { PlannedWorkflow } from './workload.js';

export interface CheckResults {
  violations: Tally;
  anomalies: Tally;
  notes: Tally;
  stepBodiesRun: number;
  stepsRecorded: number;
  stepReruns: number;
  audit: { workflowWrites: number; claimChanges: number; operationInserts: number };
}

export interface CheckOptions {
  idleLimitMs: number;
  claimWindowMs: number;
  ttlMs: number;
  renewMs: number;
  shutdownGraceMs: number;
}

/** What the checks need from the client side of the run. */
export interface ClientRecord {
  updateResults: Map<string, number[]>;
  expiring: Map<string, ExpiringOutcome[]>;
  chains: Map<string, ChainSend[]>;
  /** 'cancelcleanup': each workflow's cancel as the client saw it. */
  cleanupCancels: Map<string, CancelOutcome>;
  anomalies: Tally;
}

export function faultWindows(faults: FaultRecord[], exits: ExitRecord[]): FaultWindows {
  const done = faults.filter((f) => !f.skipped);
  return {
    gracefulStops: done
      .filter((f) => f.kind === 'sigterm' && f.pid !== undefined)
      .map((f) => ({
        engineId: f.engineId!,
        pid: f.pid!,
        from: f.at,
        to: f.endedAt ?? Infinity,
        forced: f.detail?.forced === true,
        ...(typeof f.detail?.stoppingAt === 'number' ? { stoppingAt: f.detail.stoppingAt } : {}),
      })),
    leaseLost: done
      .filter((f) => f.kind === 'lease-lost-exit')
      .map((f) => ({ engineId: f.engineId!, at: Number(f.detail?.leaseLostAt ?? f.at) })),
    pauses: done
      .filter((f) => f.kind === 'sigstop' && f.pid !== undefined)
      .map((f) => ({ engineId: f.engineId!, pid: f.pid!, from: f.at, to: f.endedAt ?? Infinity })),
    kills: exits.filter((e) => e.signal === 'SIGKILL' || !e.expected).map((e) => ({ engineId: e.engineId, at: e.at, crash: !e.expected })),
    pgDown: done.filter((f) => f.kind.startsWith('pg-')).map((f) => ({ from: f.at, to: f.endedAt ?? Infinity })),
  };
}

export function runChecks(plan: PlannedWorkflow[], d: RunData, windows: FaultWindows, client: ClientRecord, o: CheckOptions): CheckResults {
  const violations = new Tally(5);
  const notes = new Tally(3);
  const anomalies = client.anomalies;
  const { idleLimitMs, claimWindowMs } = o;
  const msgsByWf = groupBy(d.messages, (m) => m.workflow_id);
  windows.stops = d.wfAudit
    .filter((a) => (a.new_status === 'suspended' || a.new_status === 'cancelled') && a.old_status !== a.new_status)
    .map((a) => ({ workflowId: a.workflow_id, at: a.at_ms }));
  d.forbidden = expectedDeletes(plan, d, notes);
  checkOutcomes(plan, d, violations);
  checkChains(plan, d, client.chains, violations, notes);
  checkFailures(plan, d, windows, violations);
  checkHistories(plan, d, msgsByWf, violations);
  checkMessages(d, msgsByWf, violations, anomalies, new Set(plan.filter((w) => w.shape === 'chain').map((w) => w.id)));
  checkEndState(d, violations);
  checkUpdateResults(plan, client.updateResults, violations);
  checkExpiringUpdates(plan, d, client.expiring, violations, notes);
  checkDelayedStarts(plan, d, violations);
  checkTxRows(plan, d, violations, notes);
  checkCleanups(plan, d, violations, notes);
  checkCancelsKept(plan, d, client.cleanupCancels, windows, { deliveryMs: claimWindowMs }, violations, notes);
  checkHeartbeats(d, violations, notes);
  checkLedger(d, windows, violations, notes, o.ttlMs);
  checkFinishedReruns(d, windows, o, violations, notes, anomalies);
  checkStopWindows(d, windows, o, violations, notes);
  const stepReruns = classifyReruns(d, windows, notes, anomalies, o.ttlMs);
  checkWriters(d, checkEpochs(d, violations), violations);
  checkIdleGaps(d, idleLimitMs, anomalies, notes);
  classifyTakeovers(d, windows, claimWindowMs, notes, anomalies);
  const stale = anomalies.samples.query_behind_acknowledged_update ?? [];
  for (const q of stale as Array<{ workflowId: string; story?: string[] }>) q.story = story(d, q.workflowId, 30);
  let stepsRecorded = 0;
  for (const ops of d.ops.values()) stepsRecorded += ops.filter((o) => o.kind === 'step').length;
  const audit = { workflowWrites: d.wfAudit.length, claimChanges: d.claimAudit.length, operationInserts: d.opWriters.size };
  return { violations, anomalies, notes, stepBodiesRun: d.ledger.length, stepsRecorded, stepReruns, audit };
}
