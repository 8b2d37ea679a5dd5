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
} from './checks-safety';
import { checkEndState, checkHistories, checkMessages, checkOutcomes, checkUpdateResults } from './checks-state';
import { groupBy, type RunData } from './data';
import type { ExitRecord } from './engines';
import type { FaultRecord } from './faults';
import { Tally } from './util';
import type { PlannedWorkflow } from './workload';

export interface CheckResults {
  violations: Tally;
  anomalies: Tally;
  notes: Tally;
  stepBodiesRun: number;
  stepsRecorded: number;
  stepReruns: number;
  audit: { workflowWrites: number; claimChanges: number; operationInserts: number };
}

export function faultWindows(faults: FaultRecord[], exits: ExitRecord[]): FaultWindows {
  const done = faults.filter((f) => !f.skipped);
  return {
    pauses: done
      .filter((f) => f.kind === 'sigstop' && f.pid !== undefined)
      .map((f) => ({ engineId: f.engineId!, pid: f.pid!, from: f.at, to: f.endedAt ?? Infinity })),
    kills: exits.filter((e) => e.signal === 'SIGKILL' || !e.expected).map((e) => ({ engineId: e.engineId, at: e.at, crash: !e.expected })),
    pgDown: done.filter((f) => f.kind.startsWith('pg-')).map((f) => ({ from: f.at, to: f.endedAt ?? Infinity })),
  };
}

export function runChecks(
  plan: PlannedWorkflow[],
  d: RunData,
  windows: FaultWindows,
  updateResults: Map<string, number[]>,
  clientAnomalies: Tally,
  idleLimitMs: number,
  claimWindowMs: number,
): CheckResults {
  const violations = new Tally(5);
  const notes = new Tally(3);
  const anomalies = clientAnomalies;
  const msgsByWf = groupBy(d.messages, (m) => m.workflow_id);
  checkOutcomes(plan, d, violations);
  checkHistories(plan, d, msgsByWf, violations);
  checkMessages(d, msgsByWf, violations, anomalies);
  checkEndState(d, violations);
  checkUpdateResults(plan, updateResults, violations);
  checkLedger(d, windows, violations, notes);
  const stepReruns = classifyReruns(d, windows, notes, anomalies);
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
