// weft_queues, and the admission of a queue's enqueued workflows (docs/queues.md). Every admission
// is one transaction: lock the queue's row, then, in a statement that sees everything committed
// before that lock, count the queue's running workflows, pick the next enqueued ones (priority,
// then FIFO) with SKIP LOCKED, make them running and claim them for the admitting engine. So
// `concurrency` and `rateLimit` hold across engines, and nothing a crash leaves behind can make
// the running count drift: it is never stored.
import type { PoolClient } from 'pg';
import { QueueEntity } from '../entities/queue.entity.js';
import { qualify } from '../schema-name.js';
import { type SqlClient, statementName } from '../sql-client.js';
import type { ClaimFence, InboxMessage } from '../types.js';
import { claimFreeSql, type ClaimTerms } from './claim.repository.js';
import { WeftRepository } from './weft-repository.js';

function statements(schema: string) {
  const wf = qualify(schema, 'weft_workflows');
  const queues = qualify(schema, 'weft_queues');
  const claims = qualify(schema, 'weft_workflow_claims');
  const msgs = qualify(schema, 'weft_messages');
  const lease = qualify(schema, 'weft_global_lease');
  const ms = `* interval '1 millisecond'`;
  return {
    /** Creates the row if absent and locks it: admissions to one queue take turns here. */
    lock: `INSERT INTO ${queues} AS q (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET updated_at = clock_timestamp()
           RETURNING name`,
    /**
     * After `lock`, so its snapshot holds every admission committed before. $1 queue, $2 most to
     * admit, $3 concurrency, $4 perEngineConcurrency, $5 engine whose runs count against $4 (null:
     * all runs), $6 rate limit and $7 its period (ms), $8 types this engine runs, $9..$11 the
     * claim terms (null: no claims), $12/$13 the global lease fence (null: none).
     */
    admit: `
      WITH RECURSIVE q AS (
        SELECT CASE WHEN $6::int IS NULL THEN '{}'::timestamptz[]
                    ELSE ARRAY(SELECT t FROM unnest(recent_admissions) t WHERE t > clock_timestamp() - $7::float8 ${ms} ORDER BY t)
               END AS recent
        FROM ${queues} WHERE name = $1
      ),
      lease_ok AS (
        SELECT 1 FROM ${lease} l WHERE l.id = 1 AND l.holder = $12::text AND l.epoch = $13::bigint FOR SHARE OF l
      ),
      counts AS (
        SELECT count(*)::int AS running,
               count(*) FILTER (WHERE $5::text IS NULL OR EXISTS (
                 SELECT 1 FROM ${claims} c WHERE c.workflow_id = w.id AND c.engine_id = $5::text))::int AS mine
        FROM ${wf} w WHERE w.queue = $1 AND w.status = 'running'
      ),
      room AS (
        SELECT GREATEST(0, LEAST($2::int, COALESCE($3::int - counts.running, $2::int), COALESCE($4::int - counts.mine, $2::int),
                 COALESCE($6::int - cardinality(q.recent), $2::int),
                 CASE WHEN $12::text IS NULL OR EXISTS (SELECT 1 FROM lease_ok) THEN $2::int ELSE 0 END)) AS n,
               counts.running, cardinality(q.recent) AS recent_count, q.recent[1] AS oldest
        FROM counts, q
      ),
      prios AS (
        -- The queue's priorities, highest first, by skipping through weft_workflows_enqueued_idx backwards:
        -- with FIFO inside each one below, no pass sorts the whole backlog, however deep it is.
        (SELECT w.priority FROM ${wf} w WHERE w.queue = $1 AND w.status = 'enqueued' ORDER BY w.priority DESC LIMIT 1)
        UNION ALL
        SELECT (SELECT w.priority FROM ${wf} w WHERE w.queue = $1 AND w.status = 'enqueued' AND w.priority < p.priority
                ORDER BY w.priority DESC LIMIT 1)
        FROM prios p WHERE p.priority IS NOT NULL
      ),
      picked AS (
        SELECT c.id FROM prios p, LATERAL (
          SELECT w.id FROM ${wf} w
          WHERE w.queue = $1 AND w.status = 'enqueued' AND w.priority = p.priority AND w.type = ANY($8::varchar[])
          ORDER BY w.created_at, w.id
          LIMIT (SELECT n FROM room)
          FOR UPDATE OF w SKIP LOCKED
        ) c
        WHERE p.priority IS NOT NULL
        LIMIT (SELECT n FROM room)
      ),
      upd AS (
        UPDATE ${wf} w SET status = 'running', admitted_at = clock_timestamp(), updated_at = clock_timestamp(), version = w.version + 1,
               -- the epoch ins_claims gives the claim (docs/decisions/0008)
               fence_epoch = CASE WHEN $9::text IS NULL THEN w.fence_epoch
                                  ELSE COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = w.id), 0) + 1 END
        FROM picked WHERE w.id = picked.id AND w.status = 'enqueued'
        RETURNING w.id, w.type, w.input, w.parent_id, w.run_number, w.version, w.priority, w.created_at, w.admitted_at, w.fence_epoch
      ),
      ins_claims AS (
        INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
        SELECT upd.id, 1, $9::text, clock_timestamp() + $10::float8 ${ms}, clock_timestamp() FROM upd
        WHERE $9::text IS NOT NULL ORDER BY upd.id
        ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
          expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
        WHERE ${claimFreeSql(schema, 'cl', '$11::float8')}
        RETURNING workflow_id, epoch::text AS epoch
      ),
      logged AS (
        UPDATE ${queues} SET recent_admissions = (SELECT recent FROM q) || ARRAY(SELECT admitted_at FROM upd ORDER BY admitted_at)
        WHERE name = $1 AND $6::int IS NOT NULL AND EXISTS (SELECT 1 FROM upd)
      )
      SELECT room.running, room.recent_count, room.n AS room,
             GREATEST(0, extract(epoch FROM room.oldest + $7::float8 ${ms} - clock_timestamp()) * 1000)::float8 AS frees_in_ms,
             upd.id, upd.type, upd.input, upd.parent_id, upd.run_number, upd.version,
             CASE WHEN ic.epoch = upd.fence_epoch::text THEN ic.epoch END AS claim_epoch,
             CASE WHEN upd.id IS NULL THEN NULL ELSE COALESCE((
               SELECT json_agg(json_build_object('id', m.id::text, 'kind', m.kind, 'name', m.name, 'payload', m.payload) ORDER BY m.id)
               FROM ${msgs} m WHERE m.workflow_id = upd.id AND m.consumed_seq IS NULL AND m.status = 'pending'), '[]'::json) END AS inbox
      FROM room LEFT JOIN upd ON true LEFT JOIN ins_claims ic ON ic.workflow_id = upd.id
      ORDER BY upd.priority DESC, upd.created_at, upd.id`,
    /**
     * Depth and running per queue: the gauges, and whether an admission is worth a transaction.
     * The depth is counted up to $2 only, so a deep backlog does not make every pass slower.
     */
    stats: `
      SELECT q.name,
             (SELECT count(*) FROM (SELECT 1 FROM ${wf} w WHERE w.queue = q.name AND w.status = 'enqueued' LIMIT $2) d)::int AS enqueued,
             (SELECT count(*) FROM ${wf} w WHERE w.queue = q.name AND w.status = 'running')::int AS running
      FROM unnest($1::varchar[]) AS q(name)`,
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
  types: string[];
  /** Claims taken in the admitting transaction (ownership 'workflow-lease'). */
  claimer?: ClaimTerms;
  /** The global lease the admission must still hold (ownership 'lease'). */
  leaseFence?: ClaimFence;
}

export interface AdmittedWorkflow {
  id: string;
  type: string;
  input: unknown;
  parentId: string | null;
  runNumber: number;
  version: number;
  claimEpoch: string | null;
  inbox: InboxMessage[];
}

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
}

type AdmitRow = {
  running: number;
  recent_count: number;
  room: number;
  frees_in_ms: number | null;
  id: string | null;
  type: string;
  input: unknown;
  parent_id: string | null;
  run_number: number;
  version: number;
  claim_epoch: string | null;
  inbox: InboxMessage[] | null;
};

/** weft_queues. Internal: the engine's admission loop is its only user. */
export class QueueRepository extends WeftRepository<QueueEntity> {
  private readonly q: ReturnType<typeof statements>;

  /** @internal */
  constructor(
    private readonly client: SqlClient,
    schema: string,
  ) {
    super(client, QueueEntity, 'weft_queues');
    this.q = statements(schema);
  }

  /** @internal Enqueued (counted up to MAX_COUNTED_DEPTH) and running workflows per queue, over all engines. */
  async stats(names: string[]): Promise<Map<string, { enqueued: number; running: number }>> {
    const rows = await this.db.query<{ name: string; enqueued: number; running: number }>(this.q.stats, [names, MAX_COUNTED_DEPTH]);
    return new Map(rows.map((r) => [r.name, { enqueued: r.enqueued, running: r.running }]));
  }

  /** @internal One admission: lock the queue, then admit what every limit allows, in one transaction. */
  async admit(r: AdmitRequest): Promise<AdmitResult> {
    const rows = await this.client.transaction(async (client) => {
      await run(client, this.q.lock, [r.queue]);
      return run<AdmitRow>(client, this.q.admit, [
        r.queue,
        r.max,
        r.concurrency,
        r.perEngineConcurrency,
        r.perEngineOwner,
        r.rateLimit?.limit ?? null,
        r.rateLimit?.periodMs ?? 0,
        r.types,
        r.claimer?.engineId ?? null,
        r.claimer?.ttlMs ?? null,
        r.claimer?.graceMs ?? null,
        r.leaseFence?.engineId ?? null,
        r.leaseFence?.epoch ?? null,
      ]);
    });
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
        })),
      runningBefore: head?.running ?? 0,
      recentCount: head?.recent_count ?? 0,
      room: head?.room ?? 0,
      windowFreesInMs: head?.frees_in_ms ?? null,
    };
  }
}

/** A named prepared statement on the transaction's connection: the admission CTE costs more to plan than to run. */
async function run<R>(client: PoolClient, text: string, values: unknown[]): Promise<R[]> {
  return (await client.query({ name: statementName(text), text, values })).rows as R[];
}
