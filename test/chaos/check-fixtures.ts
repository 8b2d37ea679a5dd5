// Synthetic run data for the invariant checks' own tests (checks.e2e-spec.ts): rows of the
// audit tables and the ledger, and a legitimate failover history to break in one place at a time.
import { checkEpochs, checkLedger, checkWriters, type FaultWindows } from './checks-safety.js';
import { checkEndState } from './checks-state.js';
import type { ClaimAuditRow, LedgerRow, RunData, WfAuditRow, WfRow } from './data.js';
import { Tally } from './util.js';
import { blank, type PlannedWorkflow, type Shape } from './workload.js';

export const T = 1_700_000_000_000;

export function emptyData(): RunData {
  return {
    ownership: 'workflow-lease',
    workflows: new Map(),
    ops: new Map(),
    ledger: [],
    wfAudit: [],
    opWriters: new Map(),
    opsByTx: new Map(),
    claimAudit: [],
    forbidden: [],
    messages: [],
    heldClaims: new Map(),
    timers: new Map(),
    txRows: [],
    txCommitted: new Set(),
    progressAudit: [],
    clientLog: new Map(),
  };
}

export const claim = (c: Partial<ClaimAuditRow>): ClaimAuditRow => ({
  workflow_id: 'w',
  tg_op: 'UPDATE',
  old_epoch: null,
  new_epoch: '1',
  old_engine: null,
  new_engine: null,
  writer: 'weft:A1',
  at_ms: T,
  ...c,
});

export const write = (w: Partial<WfAuditRow>): WfAuditRow => ({
  workflow_id: 'w',
  tg_op: 'UPDATE',
  old_version: 1,
  new_version: 2,
  old_status: 'running',
  new_status: 'running',
  writer: 'weft:A1',
  claim_epoch: '1',
  claim_engine: 'A1',
  txid: '1',
  at_ms: T,
  ...w,
});

export const body = (l: Partial<LedgerRow>): LedgerRow => ({
  id: '1',
  workflow_id: 'w',
  seq: 0,
  attempt: 1,
  engine: 'A1',
  pid: 100,
  started_ms: T,
  step_started_ms: T,
  at_ms: T + 1,
  claim_epoch: '1',
  claim_engine: 'A1',
  claim_live: true,
  op_recorded: false,
  finished_ms: null,
  finished_aborted: null,
  progress_from: null,
  ...l,
});

export const noFaults: FaultWindows = { pauses: [], kills: [], pgDown: [], gracefulStops: [], leaseLost: [] };

/** A legitimate failover: A1 writes under epoch 1, B1 takes over (epoch 2) and finishes, releasing. */
export function legitimate(): RunData {
  const d = emptyData();
  d.claimAudit = [
    claim({ tg_op: 'INSERT', new_epoch: '1', new_engine: 'A1', writer: 'weft:A1' }),
    claim({ old_epoch: '1', new_epoch: '2', old_engine: 'A1', new_engine: 'B1', writer: 'weft:B1', at_ms: T + 5000 }),
    claim({ old_epoch: '2', new_epoch: '2', old_engine: 'B1', new_engine: null, writer: 'weft:B1', at_ms: T + 6000 }),
  ];
  d.wfAudit = [
    write({ tg_op: 'INSERT', old_version: null, new_version: 1, claim_epoch: null, claim_engine: null }),
    write({ old_version: 1, new_version: 2 }),
    write({ old_version: 2, new_version: 3, writer: 'weft:B1', claim_epoch: '2', claim_engine: 'B1', at_ms: T + 5500 }),
    write({
      old_version: 3,
      new_version: 4,
      writer: 'weft:B1',
      claim_epoch: '2',
      claim_engine: null,
      new_status: 'completed',
      at_ms: T + 6000,
    }),
  ];
  return d;
}

export const TTL_MS = 3000;

export function violationsOf(d: RunData, windows = noFaults): Record<string, number> {
  const v = new Tally();
  checkWriters(d, checkEpochs(d, v), v);
  checkLedger(d, windows, v, new Tally(), TTL_MS);
  checkEndState(d, v);
  return v.counts;
}

/** A planned workflow of `shape` (2 steps, salt 0: sum 21), with `extra` fields. */
export const planned = (id: string, shape: Shape = 'steps', extra: Partial<PlannedWorkflow> = {}): PlannedWorkflow => ({
  ...blank(id, shape, { steps: 2, stepMs: 1, salt: 0 }),
  expectedOutput: { sum: 21 },
  expectedKinds: { step: 2 },
  ...extra,
});

/** A weft_workflows row as the checks read it. */
export const wfRow = (id: string, status: string, output: unknown, type = 'chaos.steps'): WfRow => ({
  id,
  type,
  status,
  output,
  error: null,
  parent_id: null,
  completed_ms: T,
  created_ms: T,
  start_at_ms: null,
});
