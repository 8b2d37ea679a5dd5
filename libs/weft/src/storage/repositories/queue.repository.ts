// weft_queues, and the admission of a queue's enqueued workflows (docs/queues.md). Every admission
// is one call of the admission function (queue-admit.ts, one round trip): lock the queue's row,
// then, in a statement that sees everything committed before that lock, count the queue's (and
// each partition key's) running workflows, pick the next enqueued ones with SKIP LOCKED, make
// them running and claim them for the admitting engine. So `concurrency`, `rateLimit` and the
// per-key limits hold across engines, and nothing a crash leaves behind can make a running count
// drift: it is never stored.
import { QueueEntity } from '../entities/queue.entity.js';
import { qualify } from '../schema-name.js';
import type { SqlClient } from '../sql-client.js';
import type { WorkflowAttributes } from '../../common/types.js';
import type { AdmittedWorkflow, ClaimFence, InboxMessage } from '../types.js';
import type { ClaimTerms } from './claim.repository.js';
import { queueNoticeSql } from '../talk-notice.js';
import { notifyChannel } from './message.repository.js';
import { admitFunction, retakeFunction } from './queue-admit.js';
import { WeftRepository } from './weft-repository.js';

function statements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  return {
    /** One admission, in one round trip (queue-admit.ts). */
    admit: `SELECT * FROM ${admitFunction(schema)}($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    /**
     * Depth and running per queue: the gauges, and whether an admission is worth a transaction.
     * The depth is counted up to $2 only, so a deep backlog does not make every pass slower.
     */
    stats: `
      SELECT q.name,
             (SELECT count(*) FROM (SELECT 1 FROM ${wf} w WHERE w.queue = q.name AND w.status = 'enqueued' LIMIT $2) d)::int AS enqueued,
             (SELECT count(*) FROM ${wf} w WHERE w.queue = q.name AND w.status = 'running'
                AND (w.slot_released_at IS NULL OR w.slot_wanted_at IS NOT NULL))::int AS running
      FROM unnest($1::varchar[]) AS q(name)`,
    /**
     * A parked run of a releaseWhileWaiting queue gives its slot back, at the version it last wrote
     * (a run that moved on, or a row another writer changed, keeps it). The version is not bumped:
     * the run's next commit still compares against it.
     */
    release: `UPDATE ${wf} SET slot_released_at = clock_timestamp()
      WHERE id = $1 AND version = $2 AND queue = $3 AND status = 'running' AND slot_released_at IS NULL RETURNING id`,
    /** A slot of the queue is free while work waits that this engine cannot take: the other engines admit it. */
    announce: `SELECT pg_notify('${notifyChannel(schema)}', ${queueNoticeSql('$1::text', '$2::text')})`,
    /** Woken runs take slots again, under the queue's lock (queue-admit.ts). */
    retake: `SELECT id FROM ${retakeFunction(schema)}($1, $2, $3, $4)`,
  };
}

/** The depth gauge saturates here: counting a deeper backlog on every pass would cost more than it tells. */
export const MAX_COUNTED_DEPTH = 10_000;

export interface AdmitRequest {
  queue: string;
  /** The most this pass admits (a batch bound and the engine's own room). */
  max: number;
  concurrency: number | null;
  perEngineConcurrency: number | null;
  /** Runs claimed by this engine count against perEngineConcurrency; null: every run of the queue counts. */
  perEngineOwner: string | null;
  rateLimit: { limit: number; periodMs: number } | null;
  /** Per-key limits of a partitioned queue (null: not partitioned). */
  partition: { concurrency: number | null; rateLimit: { limit: number; periodMs: number } | null } | null;
  types: string[];
  /** Claims taken in the admitting transaction (ownership 'workflow-lease'). */
  claimer?: ClaimTerms;
  /** The global lease the admission must still hold (ownership 'lease'). */
  leaseFence?: ClaimFence;
}

export type { AdmittedWorkflow };

export interface AdmitResult {
  admitted: AdmittedWorkflow[];
  /** Running in the queue before this admission (all engines). */
  runningBefore: number;
  /** Admissions inside the rate limit's window before this one. */
  recentCount: number;
  /** How many this admission was allowed (every limit applied). */
  room: number;
  /** When the oldest admission in the window leaves it (ms from now); null without a rate limit or admissions. */
  windowFreesInMs: number | null;
  /** Whether enqueued work was left after this admission (of any type, any key). */
  more: boolean;
}

type AdmitRow = {
  running: number;
  recent_count: number;
  room: number;
  frees_in_ms: number | null;
  more: boolean;
  id: string | null;
  type: string;
  input: unknown;
  parent_id: string | null;
  run_number: number;
  version: number;
  claim_epoch: string | null;
  inbox: InboxMessage[] | null;
  singleton: boolean | null;
  /** Whether it may have timer rows (1734351700000); absent before it. */
  timers?: boolean | null;
  /** What the start stored for its run (1734352500000); absent before it. */
  headers?: Record<string, string> | null;
  attributes?: WorkflowAttributes | null;
  trace_context?: string | null;
};

/** weft_queues. Internal: the engine's admission loop is its only user. */
export class QueueRepository extends WeftRepository<QueueEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal */
  constructor(client: SqlClient, schema: string) {
    super(client, QueueEntity, 'weft_queues');
    this.q = statements(schema);
  }

  /** @internal Enqueued (counted up to MAX_COUNTED_DEPTH) and running workflows per queue, over all engines. */
  async stats(names: string[]): Promise<Map<string, { enqueued: number; running: number }>> {
    const rows = await this.db.query<{ name: string; enqueued: number; running: number }>(this.q.stats, [names, MAX_COUNTED_DEPTH]);
    return new Map(rows.map((r) => [r.name, { enqueued: r.enqueued, running: r.running }]));
  }

  /** @internal A parked run gives its slot back; false when the row moved on meanwhile. */
  async release(workflowId: string, version: number, queue: string): Promise<boolean> {
    return (await this.db.query(this.q.release, [workflowId, version, queue])).length > 0;
  }

  /** @internal Tells the other engines (by NOTIFY) that a slot of `queue` is free while work waits. */
  async announceFreed(queue: string, engineId: string): Promise<void> {
    await this.db.query(this.q.announce, [queue, engineId]);
  }

  /** @internal Woken runs of this engine ask for their slots again; resolves with those that may go on. */
  async retake(queue: string, ids: string[], concurrency: number | null, perKey: number | null): Promise<Set<string>> {
    const rows = await this.db.query<{ id: string }>(this.q.retake, [queue, ids, concurrency, perKey]);
    return new Set(rows.map((r) => r.id));
  }

  /** @internal One admission: lock the queue, then admit what every limit allows, in one call. */
  async admit(r: AdmitRequest): Promise<AdmitResult> {
    return admitResult(await this.db.query<AdmitRow>(this.q.admit, admitParams(r)));
  }
}

const rateParams = (rate: { limit: number; periodMs: number } | null | undefined) => (rate ? [rate.limit, rate.periodMs] : [null, 0]);

/** The admission function's arguments, in its order (queue-admit.ts). */
function admitParams(r: AdmitRequest): unknown[] {
  const claim = r.claimer ? [r.claimer.engineId, r.claimer.ttlMs, r.claimer.graceMs] : [null, null, null];
  const fence = r.leaseFence ? [r.leaseFence.engineId, r.leaseFence.epoch] : [null, null];
  const p = r.partition;
  return [
    ...[r.queue, r.max, r.concurrency, r.perEngineConcurrency, r.perEngineOwner],
    ...rateParams(r.rateLimit),
    r.types,
    ...claim,
    ...fence,
    p !== null,
    p ? p.concurrency : null,
    ...rateParams(p?.rateLimit),
  ];
}

function admitResult(rows: AdmitRow[]): AdmitResult {
  // The function always returns a row: the figures, with no workflow when none was admitted.
  const head = rows[0];
  return {
    admitted: rows
      .filter((w) => w.id !== null)
      .map((w) => ({
        id: w.id!,
        type: w.type,
        input: w.input,
        parentId: w.parent_id,
        runNumber: w.run_number,
        version: w.version,
        claimEpoch: w.claim_epoch,
        inbox: w.inbox ?? [],
        singleton: w.singleton === true,
        storedTimers: w.timers !== false,
        headers: w.headers,
        attributes: w.attributes,
        traceContext: w.trace_context,
      })),
    runningBefore: head.running,
    recentCount: head.recent_count,
    room: head.room,
    windowFreesInMs: head.frees_in_ms,
    more: head.more,
  };
}
