// Everything the invariant checks read, loaded once from the database after the run.
import type { HarnessDb } from './db.js';
import { LEDGER_SCHEMA } from './schema.js';

export interface WfRow {
  id: string;
  type: string;
  status: string;
  output: unknown;
  error: unknown;
  parent_id: string | null;
  completed_ms: number | null;
  created_ms: number | null;
  /** A delayed start's due time. */
  start_at_ms: number | null;
  /** The fence (docs/decisions/0008); undefined when the schema predates the column (an older worker). */
  fence_epoch?: string | null;
}
export interface OpRow {
  workflow_id: string;
  seq: number;
  kind: string;
  name: string;
  status: string;
  result: unknown;
}
export interface LedgerRow {
  id: string;
  workflow_id: string;
  seq: number;
  attempt: number;
  engine: string;
  pid: number;
  started_ms: number;
  /** When the engine started this step's first attempt (the retry loop this body belongs to). */
  step_started_ms: number;
  at_ms: number;
  claim_epoch: string | null;
  claim_engine: string | null;
  claim_live: boolean;
  op_recorded: boolean;
  /** End-of-body mark: when the body returned (null: it never did, or the mark was lost with the process). */
  finished_ms: number | null;
  /** Whether its ctx.signal was aborted when it returned (the engine had given it up). */
  finished_aborted: boolean | null;
  /** A heartbeating step's body ('cancelcleanup'): the chunk it resumed after (-1: from the start); null for other steps. */
  progress_from: number | null;
}
/** A heartbeat saved in weft_step_progress (the audit trigger's copy: the rows go when their step ends). */
export interface ProgressAuditRow {
  workflow_id: string;
  seq: number;
  attempt: number;
  /** The saved details' `done` (the last chunk finished); null when they have none. */
  done: number | null;
  writer: string;
  at_ms: number;
}
export interface WfAuditRow {
  workflow_id: string;
  tg_op: string;
  old_version: number | null;
  new_version: number;
  old_status: string | null;
  new_status: string;
  writer: string;
  claim_epoch: string | null;
  claim_engine: string | null;
  txid: string;
  at_ms: number;
}
export interface ClaimAuditRow {
  workflow_id: string;
  tg_op: string;
  old_epoch: string | null;
  new_epoch: string;
  old_engine: string | null;
  new_engine: string | null;
  writer: string;
  at_ms: number;
}
export interface MessageRow {
  id: string;
  workflow_id: string;
  kind: string;
  name: string;
  payload: { token?: string } | null;
  consumed_seq: number | null;
  status: string;
  result: { value?: unknown; error?: unknown } | null;
  /** When the request was stored (its transaction's start). */
  created_ms: number;
}

export interface RunData {
  /** 'lease': claim_epoch/claim_engine in wfAudit and the ledger are the global lease's (claimAudit: LEASE_ID). */
  ownership: 'workflow-lease' | 'lease';
  workflows: Map<string, WfRow>;
  ops: Map<string, OpRow[]>;
  ledger: LedgerRow[];
  wfAudit: WfAuditRow[];
  opWriters: Map<string, string>;
  /** Operations recorded by each transaction for one workflow (key: txid#workflowId), as "seq:kind:name". */
  opsByTx: Map<string, string[]>;
  claimAudit: ClaimAuditRow[];
  forbidden: Array<{ what: string; workflow_id: string | null; detail: string | null; writer: string }>;
  messages: MessageRow[];
  heldClaims: Map<string, { engine_id: string; epoch: string }>;
  timers: Map<string, number>;
  /** Application rows of transactional steps ('chaos.txsteps'), as committed. */
  txRows: Array<{ workflow_id: string; seq: number; lid: string; engine: string }>;
  /** The ledger ids of the bodies whose transaction committed (their lid is in txRows). */
  txCommitted: Set<string>;
  /** Heartbeats the engines saved, in write order. */
  progressAudit: ProgressAuditRow[];
  /** The client's calls per workflow (filled in by the harness from the driver). */
  clientLog: Map<string, Array<{ at: number; what: string }>>;
}

const ms = (col: string, as: string) => `(extract(epoch from ${col}) * 1000)::float8 AS ${as}`;

function groupBy<T>(rows: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const r of rows) {
    const k = key(r);
    const list = m.get(k);
    if (list) list.push(r);
    else m.set(k, [r]);
  }
  return m;
}

export async function loadRunData(db: HarnessDb, weft: string, ownership: RunData['ownership'] = 'workflow-lease'): Promise<RunData> {
  const s = LEDGER_SCHEMA;
  const q = <R>(sql: string) => db.query<R>(sql, [], 300_000);
  const [wfs, ops, ledger, wfAudit, opAudit, claimAudit, forbidden, messages, claims, timers, txRows, progressAudit] = await Promise.all([
    q<WfRow & { has_fence: boolean }>(`SELECT id, type, status, output, error, parent_id, ${ms('completed_at', 'completed_ms')},
                ${ms('created_at', 'created_ms')}, ${ms('start_at', 'start_at_ms')},
                to_jsonb(w) ->> 'fence_epoch' AS fence_epoch, to_jsonb(w) ? 'fence_epoch' AS has_fence
                FROM ${weft}.weft_workflows w`),
    q<OpRow>(`SELECT workflow_id, seq, kind, name, status, result FROM ${weft}.weft_operations ORDER BY workflow_id, seq`),
    q<LedgerRow>(`SELECT id::text, workflow_id, seq, attempt, engine, pid, ${ms('body_started', 'started_ms')},
                  ${ms('step_started', 'step_started_ms')}, ${ms('at', 'at_ms')},
                  claim_epoch::text, claim_engine, claim_live, op_recorded, ${ms('body_finished', 'finished_ms')}, finished_aborted,
                  progress_from FROM ${s}.ledger ORDER BY id`),
    q<WfAuditRow>(`SELECT workflow_id, tg_op, old_version, new_version, old_status, new_status, writer, claim_epoch::text, claim_engine,
                   txid::text, ${ms('at', 'at_ms')} FROM ${s}.wf_audit ORDER BY id`),
    q<{ workflow_id: string; seq: number; kind: string; name: string; writer: string; txid: string }>(
      `SELECT workflow_id, seq, kind, name, writer, txid::text FROM ${s}.op_audit ORDER BY id`,
    ),
    q<ClaimAuditRow>(`SELECT workflow_id, tg_op, old_epoch::text, new_epoch::text, old_engine, new_engine, writer, ${ms('at', 'at_ms')}
                      FROM ${s}.claim_audit ORDER BY id`),
    q<RunData['forbidden'][number]>(`SELECT what, workflow_id, detail, writer FROM ${s}.forbidden ORDER BY id`),
    q<MessageRow>(`SELECT id::text, workflow_id, kind, name, payload, consumed_seq, status, result, ${ms('created_at', 'created_ms')}
                   FROM ${weft}.weft_messages ORDER BY id`),
    q<{ workflow_id: string; engine_id: string; epoch: string }>(
      `SELECT workflow_id, engine_id, epoch::text FROM ${weft}.weft_workflow_claims WHERE engine_id IS NOT NULL`,
    ),
    // A cancel's grace timer that a request stored as the run ended drops itself when it comes due (docs/cancellation.md).
    q<{ workflow_id: string; n: number }>(
      `SELECT workflow_id, count(*)::int AS n FROM ${weft}.weft_timers WHERE kind <> 'cancel-deadline' GROUP BY workflow_id`,
    ),
    q<RunData['txRows'][number]>(`SELECT workflow_id, seq, lid::text, engine FROM ${s}.tx_rows ORDER BY workflow_id, seq`),
    q<ProgressAuditRow>(`SELECT workflow_id, seq, attempt, (details::json ->> 'done')::int AS done, writer, ${ms('at', 'at_ms')}
                         FROM ${s}.progress_audit WHERE run_number = 1 ORDER BY id`),
  ]);
  return {
    ownership,
    workflows: new Map(wfs.map(({ has_fence, ...w }) => [w.id, { ...w, fence_epoch: has_fence ? (w.fence_epoch ?? null) : undefined }])),
    ops: groupBy(ops, (o) => o.workflow_id),
    ledger,
    wfAudit,
    opWriters: new Map(opAudit.map((o) => [`${o.workflow_id}#${o.seq}`, o.writer])),
    opsByTx: new Map(
      [...groupBy(opAudit, (o) => `${o.txid}#${o.workflow_id}`)].map(([k, ops]) => [k, ops.map((o) => `${o.seq}:${o.kind}:${o.name}`)]),
    ),
    claimAudit,
    forbidden,
    messages,
    heldClaims: new Map(claims.map((c) => [c.workflow_id, { engine_id: c.engine_id, epoch: c.epoch }])),
    timers: new Map(timers.map((t) => [t.workflow_id, t.n])),
    txRows,
    txCommitted: new Set(txRows.map((r) => r.lid)),
    progressAudit,
    clientLog: new Map(),
  };
}

export { groupBy };
