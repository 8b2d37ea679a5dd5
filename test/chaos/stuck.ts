// For workflows that never finished: who holds them, is that engine alive, what they wait on.
import type { HarnessDb } from './db.js';
import type { Fleet } from './engines.js';

export interface StuckReport {
  workflowId: string;
  type: string;
  status: string;
  claim: { engineId: string | null; epoch: string; expiresInMs: number | null; holderState: string } | null;
  lastOps: string[];
  timers: Array<{ kind: string; seq: number; dueInMs: number }>;
  pendingMessages: Array<{ kind: string; name: string }>;
  lastWriteAgoMs: number | null;
  /** What the holding engine has in memory for it (when that engine answers). */
  holderMemory?: unknown;
}

export async function diagnoseStuck(
  db: HarnessDb,
  weft: string,
  fleet: Fleet,
  limit = 25,
): Promise<{ count: number; samples: StuckReport[] }> {
  const ids = await db.query<{ id: string; type: string; status: string }>(
    `SELECT id, type, status FROM ${weft}.weft_workflows WHERE status NOT IN ('completed','failed','cancelled','timed_out') ORDER BY id`,
  );
  const samples: StuckReport[] = [];
  for (const w of ids.slice(0, limit)) samples.push(await diagnoseOne(db, weft, fleet, w));
  return { count: ids.length, samples };
}

async function diagnoseOne(
  db: HarnessDb,
  weft: string,
  fleet: Fleet,
  w: { id: string; type: string; status: string },
): Promise<StuckReport> {
  const [claim] = await db.query<{ engine_id: string | null; epoch: string; expires_in: number | null }>(
    `SELECT engine_id, epoch::text, (extract(epoch from expires_at - clock_timestamp()) * 1000)::float8 AS expires_in
     FROM ${weft}.weft_workflow_claims WHERE workflow_id = $1`,
    [w.id],
  );
  const ops = await db.query<{ seq: number; kind: string; name: string }>(
    `SELECT seq, kind, name FROM ${weft}.weft_operations WHERE workflow_id = $1 ORDER BY seq DESC LIMIT 3`,
    [w.id],
  );
  const timers = await db.query<{ kind: string; seq: number; due: number }>(
    `SELECT kind, seq, (extract(epoch from fire_at - clock_timestamp()) * 1000)::float8 AS due FROM ${weft}.weft_timers WHERE workflow_id = $1`,
    [w.id],
  );
  const msgs = await db.query<{ kind: string; name: string }>(
    `SELECT kind, name FROM ${weft}.weft_messages WHERE workflow_id = $1 AND consumed_seq IS NULL AND status = 'pending'`,
    [w.id],
  );
  const [last] = await db.query<{ ago: number | null }>(
    `SELECT (extract(epoch from clock_timestamp() - max(at)) * 1000)::float8 AS ago FROM chaos.wf_audit WHERE workflow_id = $1`,
    [w.id],
  );
  const holder = claim?.engine_id ? fleet.all.find((e) => e.engineId === claim.engine_id) : undefined;
  let timer: NodeJS.Timeout | undefined;
  const holderMemory =
    holder?.state === 'ready'
      ? await Promise.race([
          holder.call({ op: 'inspect', workflowId: w.id }).catch((err: Error) => `inspect failed: ${err.message}`),
          new Promise((r) => (timer = setTimeout(() => r('inspect timed out'), 5000))),
        ])
      : undefined;
  clearTimeout(timer);
  return {
    workflowId: w.id,
    type: w.type,
    status: w.status,
    claim: claim
      ? {
          engineId: claim.engine_id,
          epoch: claim.epoch,
          expiresInMs: claim.expires_in === null ? null : Math.round(claim.expires_in),
          holderState: claim.engine_id ? (holder?.state ?? 'unknown engine') : 'no holder',
        }
      : null,
    lastOps: ops.map((o) => `${o.seq}:${o.kind}:${o.name}`),
    timers: timers.map((t) => ({ kind: t.kind, seq: t.seq, dueInMs: Math.round(t.due) })),
    pendingMessages: msgs,
    lastWriteAgoMs: last?.ago === null || last?.ago === undefined ? null : Math.round(last.ago),
    holderMemory,
  };
}
