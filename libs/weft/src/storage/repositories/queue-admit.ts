// The admission of a queue's enqueued workflows as one stored function, so that an admission
// costs one round trip (docs/decisions/0026-admission-in-one-round-trip-39.md). Its first
// statement locks the queue's row; its second, which takes a fresh snapshot (READ COMMITTED, a
// volatile function), sees every admission committed before that lock, counts the queue's running
// workflows from weft_workflows (never a stored counter), picks the next enqueued ones, makes
// them running and claims them for the admitting engine. In a single statement the snapshot
// would predate the lock wait and two engines could both fill the same free slots.
import { qualify } from '../schema-name.js';
import { claimFreeSql } from './claim.repository.js';

/** A pass looks at up to this many partition keys with work, from where the last pass left off. */
export const MAX_KEYS_WALKED = 1000;

/**
 * $1 queue, $2 most to admit, $3 concurrency, $4 perEngineConcurrency, $5 engine whose runs count
 * against $4 (null: all runs), $6 rate limit and $7 its period (ms), $8 types this engine runs,
 * $9..$11 the claim terms (null: no claims), $12/$13 the global lease fence (null: none), $14
 * partitioned, $15 per-key concurrency, $16 per-key rate limit and $17 its period (ms).
 */
function admitQuery(
  schema: string,
  slots: boolean,
  byId: boolean,
  timers: boolean,
  seeks: boolean,
  launch: boolean,
  keyLimits: boolean,
): string {
  const wf = qualify(schema, 'weft_workflows');
  const queues = qualify(schema, 'weft_queues');
  const claims = qualify(schema, 'weft_workflow_claims');
  const msgs = qualify(schema, 'weft_messages');
  const lease = qualify(schema, 'weft_global_lease');
  const ms = `* interval '1 millisecond'`;
  const enqueued = `w.queue = $1 AND w.status = 'enqueued'`;
  /** The next key with work after `after` (a condition on w.partition_key), by the partition index. */
  const nextKey = (after: string) =>
    `SELECT w.partition_key FROM ${wf} w WHERE ${enqueued} AND w.partition_key IS NOT NULL AND ${after}
     ORDER BY w.partition_key LIMIT 1`;
  const cursor = '(SELECT cursor FROM q)';
  // A parked run of a releaseWhileWaiting queue gave its slot back; one woken since wants it again
  // and goes before fresh admissions, so it still counts here (docs/decisions/0040).
  const holds = (w: string) => (slots ? ` AND (${w}.slot_released_at IS NULL OR ${w}.slot_wanted_at IS NOT NULL)` : '');
  const clearSlot = slots ? 'slot_released_at = NULL, slot_wanted_at = NULL, ' : '';
  const keyRunning = `(SELECT count(*) FROM ${wf} w
                               WHERE w.queue = $1 AND w.partition_key = wk.k AND w.status = 'running'${holds('w')})::int`;
  const keyAdmitted = (since: string) =>
    `(SELECT count(*) FROM ${wf} w WHERE w.queue = $1 AND w.partition_key = wk.k AND w.admitted_at > ${since})::int`;
  const keyRoomEager = `COALESCE($15::int - ${keyRunning}, $2::int),
          COALESCE($16::int - ${keyAdmitted(`clock_timestamp() - $17::float8 ${ms}`)}, $2::int)`;
  // keyLimits: a count runs only for a limit that is set (an operator evaluates both sides: the
  // admitted count read every admission the key ever had when no per-key rate limit was set), and
  // the window's start is one value, so that the count seeks partition_admitted_idx to it (a
  // volatile bound was a filter over the key's whole history). docs/decisions/0048.
  const since = keyLimits ? `, clock_timestamp() - $17::float8 ${ms} AS since` : '';
  const keyRoomLazy = `CASE WHEN $15::int IS NULL THEN $2::int ELSE $15::int - ${keyRunning} END,
          CASE WHEN $16::int IS NULL THEN $2::int ELSE $16::int - ${keyAdmitted('(SELECT since FROM q)')} END`;
  return `
    WITH RECURSIVE q AS (
      SELECT CASE WHEN $6::int IS NULL THEN '{}'::timestamptz[]
                  ELSE ARRAY(SELECT t FROM unnest(recent_admissions) t WHERE t > clock_timestamp() - $7::float8 ${ms} ORDER BY t)
             END AS recent,
             partition_cursor AS cursor${since}
      FROM ${queues} WHERE name = $1
    ),
    lease_ok AS (
      SELECT 1 FROM ${lease} l WHERE l.id = 1 AND l.holder = $12::text AND l.epoch = $13::bigint FOR SHARE OF l
    ),
    counts AS (
      SELECT count(*)::int AS running,
             count(*) FILTER (WHERE $5::text IS NULL OR EXISTS (
               SELECT 1 FROM ${claims} c WHERE c.workflow_id = w.id AND c.engine_id = $5::text))::int AS mine
      FROM ${wf} w WHERE w.queue = $1 AND w.status = 'running'${holds('w')}
    ),
    room AS (
      SELECT GREATEST(0, LEAST($2::int, COALESCE($3::int - counts.running, $2::int), COALESCE($4::int - counts.mine, $2::int),
               COALESCE($6::int - cardinality(q.recent), $2::int),
               CASE WHEN $12::text IS NULL OR EXISTS (SELECT 1 FROM lease_ok) THEN $2::int ELSE 0 END)) AS n,
             counts.running, cardinality(q.recent) AS recent_count, q.recent[1] AS oldest
      FROM counts, q
    ),
    prios AS (
      -- Unpartitioned: the queue's priorities, highest first, by skipping through
      -- weft_workflows_enqueued_idx backwards; with FIFO inside each one below, no pass sorts the backlog.
      (SELECT w.priority FROM ${wf} w WHERE NOT $14::boolean AND ${enqueued} ORDER BY w.priority DESC LIMIT 1)
      UNION ALL
      SELECT (SELECT w.priority FROM ${wf} w WHERE ${enqueued} AND w.priority < p.priority ORDER BY w.priority DESC LIMIT 1)
      FROM prios p WHERE p.priority IS NOT NULL
    ),
    plain AS (
      SELECT c.id, NULL::text AS pkey, 0::bigint AS rank, 0 AS i FROM prios p, LATERAL (
        SELECT w.id FROM ${wf} w
        WHERE ${enqueued} AND w.priority = p.priority AND w.type = ANY($8::varchar[])
        ORDER BY w.created_at, w.id
        LIMIT (SELECT n FROM room)
        FOR UPDATE OF w SKIP LOCKED
      ) c
      WHERE p.priority IS NOT NULL
      LIMIT (SELECT n FROM room)
    ),
    -- Partitioned: the keys with work, by skipping through weft_workflows_partition_enqueued_idx,
    -- first those after the key the last pass ended on, then from the first key up to it.
    keys_after AS (
      SELECT (${
        seeks
          ? // Each branch a seek in the index: with the OR, the walk read every key before the cursor first.
            `CASE WHEN ${cursor} IS NULL THEN (${nextKey('true')}) ELSE (${nextKey(`w.partition_key > ${cursor}`)}) END`
          : nextKey(`(${cursor} IS NULL OR w.partition_key > ${cursor})`)
      }) AS k, 1 AS i
      WHERE $14::boolean AND (SELECT n FROM room) > 0
      UNION ALL
      SELECT (${nextKey('w.partition_key > a.k')}), a.i + 1 FROM keys_after a WHERE a.k IS NOT NULL AND a.i < ${MAX_KEYS_WALKED}
    ),
    keys_before AS (
      SELECT (${nextKey(`w.partition_key <= ${cursor}`)}) AS k, ${MAX_KEYS_WALKED + 1} AS i
      WHERE $14::boolean AND (SELECT n FROM room) > 0 AND ${cursor} IS NOT NULL
      UNION ALL
      SELECT (${nextKey(`w.partition_key > b.k AND w.partition_key <= ${cursor}`)}), b.i + 1 FROM keys_before b
      WHERE b.k IS NOT NULL AND b.i < ${2 * MAX_KEYS_WALKED}
    ),
    walked AS (
      SELECT k, i FROM keys_after WHERE k IS NOT NULL
      UNION ALL
      SELECT k, i FROM keys_before WHERE k IS NOT NULL
    ),
    -- Each key's room under its own limits (its running rows, its admissions in the window),
    -- counted from weft_workflows; the walk stops at as many keys with room as the batch holds.
    key_room AS (
      SELECT wk.k, wk.i, r.n FROM walked wk, LATERAL (
        SELECT LEAST((SELECT n FROM room), ${keyLimits ? keyRoomLazy : keyRoomEager}) AS n
      ) r
      WHERE r.n > 0
      LIMIT (SELECT n FROM room)
    ),
    -- Every key takes an even share of the batch from its highest priority, FIFO; across keys,
    -- rank by rank (everyone's first, then everyone's second), so a flooding key cannot hold back
    -- a small one. What a short key (or priority) leaves unused goes to the next pass.
    cand AS (
      SELECT c.id, kr.k, kr.i, row_number() OVER (PARTITION BY kr.k ORDER BY c.created_at, c.id) AS rank
      FROM key_room kr, LATERAL (
        SELECT w.id, w.created_at FROM ${wf} w
        WHERE ${enqueued} AND w.partition_key = kr.k AND w.type = ANY($8::varchar[])
          AND w.priority = (SELECT x.priority FROM ${wf} x WHERE x.queue = $1 AND x.status = 'enqueued' AND x.partition_key = kr.k
                            ORDER BY x.priority DESC LIMIT 1)
        ORDER BY w.created_at, w.id
        LIMIT LEAST(kr.n, ceil((SELECT n FROM room)::numeric / GREATEST(1, (SELECT count(*) FROM key_room)))::int)
        FOR UPDATE OF w SKIP LOCKED
      ) c
    ),
    part AS (
      SELECT id, k AS pkey, rank, i FROM cand ORDER BY rank, i LIMIT (SELECT n FROM room)
    ),
    picked AS (
      SELECT id, pkey, rank, i FROM plain UNION ALL SELECT id, pkey, rank, i FROM part
    ),
    upd AS (
      UPDATE ${wf} w SET status = 'running', ${clearSlot}admitted_at = clock_timestamp(), updated_at = clock_timestamp(), version = w.version + 1,
             -- the epoch ins_claims gives the claim (docs/decisions/0008)
             fence_epoch = CASE WHEN $9::text IS NULL THEN w.fence_epoch
                                ELSE COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = w.id), 0) + 1 END
      -- seeks: by id alone (the picks locked rows whose latest version is enqueued, and hold them); the
      -- status condition let the generic plan scan the whole enqueued index for the ids instead.
      FROM picked WHERE w.id = picked.id${seeks ? '' : " AND w.status = 'enqueued'"}${byId ? ' AND w.id = ANY(ARRAY(SELECT id FROM picked))' : ''}
      RETURNING w.id, w.type, w.input, w.parent_id, w.run_number, w.version, w.priority, w.created_at, w.admitted_at, w.fence_epoch,
                picked.rank, picked.i, picked.pkey${slots ? ', w.singleton_key IS NOT NULL AS singleton' : ''}${
                  // timer rows it may have (its deadline's; a delayed start's went when it fired)
                  timers ? ', w.deadline IS NOT NULL OR w.start_at IS NOT NULL AS timers' : ''
                }${launch ? LAUNCH_RETURNING : ''}
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
      -- The rate log, and where the next pass starts its walk over the keys (after the last one served).
      UPDATE ${queues} SET
        recent_admissions = CASE WHEN $6::int IS NULL THEN recent_admissions
                                 ELSE (SELECT recent FROM q) || ARRAY(SELECT admitted_at FROM upd ORDER BY admitted_at) END,
        partition_cursor = CASE WHEN $14::boolean THEN (SELECT pkey FROM upd ORDER BY rank DESC, i DESC LIMIT 1)
                                ELSE partition_cursor END
      WHERE name = $1 AND ($6::int IS NOT NULL OR $14::boolean) AND EXISTS (SELECT 1 FROM upd)
    ),
    -- Whether work is left after this admission (its rows still read as enqueued in this snapshot).
    depth AS (
      SELECT count(*)::int AS n FROM (SELECT 1 FROM ${wf} w WHERE ${enqueued}${
        // from the newest end of the queue's range: the oldest holds every admitted row's dead entry
        keyLimits ? ' ORDER BY w.priority DESC, w.created_at DESC, w.id DESC' : ''
      } LIMIT (SELECT n FROM room) + 1) d
    )
    SELECT room.running, room.recent_count::int, room.n::int AS room,
           GREATEST(0, extract(epoch FROM room.oldest + $7::float8 ${ms} - clock_timestamp()) * 1000)::float8 AS frees_in_ms,
           (SELECT n FROM depth) > (SELECT count(*) FROM upd) AS more,
           upd.id::text, upd.type::text, upd.input, upd.parent_id::text, upd.run_number, upd.version,
           CASE WHEN ic.epoch = upd.fence_epoch::text THEN ic.epoch END AS claim_epoch,
           CASE WHEN upd.id IS NULL THEN NULL ELSE COALESCE((
             SELECT json_agg(json_build_object('id', m.id::text, 'kind', m.kind, 'name', m.name, 'payload', m.payload) ORDER BY m.id)
             FROM ${msgs} m WHERE m.workflow_id = upd.id AND m.consumed_seq IS NULL AND m.status = 'pending'), '[]'::json) END AS inbox
           ${slots ? ', upd.singleton' : ''}${timers ? ', upd.timers' : ''}${launch ? LAUNCH_SELECTED : ''}
    FROM room LEFT JOIN upd ON true LEFT JOIN ins_claims ic ON ic.workflow_id = upd.id
    ORDER BY upd.rank, upd.i, upd.priority DESC, upd.created_at, upd.id`;
}

// What the start stored that its run begins with, NULL when the start had none (docs/decisions/0046):
// the engine launches the run from these, as a direct start's, without reading its row again.
const LAUNCH_RETURNING = ', w.headers, w.attributes, w.trace_context';
const LAUNCH_SELECTED = ', upd.headers, upd.attributes, upd.trace_context::text';
const LAUNCH_COLUMNS = ', headers json, attributes jsonb, trace_context text';

const ADMIT_ARGS = 'text, int, int, int, text, int, float8, varchar[], text, float8, float8, text, bigint, boolean, int, int, float8';

/** Drops the function (a migration that changes what it returns drops it first). */
export const dropAdmitFunctionSql = (schema: string): string => `DROP FUNCTION IF EXISTS ${admitFunction(schema)}(${ADMIT_ARGS})`;

/** The function's name in `schema`. */
export const admitFunction = (schema: string): string => qualify(schema, 'weft_queue_admit');

/**
 * The function a migration creates. The lock and the admission in one call: the lock first,
 * then the admission in its own statement, hence its own snapshot. `slots`: as 1734351200000 made
 * it (releaseWhileWaiting); `byId`: the admitting UPDATE finds the picked rows by id, as
 * 1734351300000 made it (the generic plan hashed every enqueued row of every queue for it, on every
 * call: 0.25 ms at 1,000 enqueued, growing with the backlog); `timers`: it also says whether an
 * admitted workflow may have timer rows, as 1734351700000 made it; `seeks`: its UPDATE and its walk
 * over the keys seek in their indexes instead of reading the backlog, as 1734352100000 made it. `launch`:
 * it also returns the start's headers, attributes and trace context, as 1734352500000 made it;
 * `keyLimits`: a partitioned walk counts a key's rows only for the per-key limits set, and its rate
 * window by an index seek, as 1734352700000 made it. Each migration keeps its own text.
 */
export function admitFunctionSql(
  schema: string,
  slots = true,
  byId = slots,
  timers = false,
  seeks = false,
  launch = false,
  keyLimits = false,
): string {
  const queues = qualify(schema, 'weft_queues');
  return `
    CREATE OR REPLACE FUNCTION ${admitFunction(schema)}(${ADMIT_ARGS})
    RETURNS TABLE (running int, recent_count int, room int, frees_in_ms float8, more boolean, id text, type text, input json,
                   parent_id text, run_number int, version int, claim_epoch text, inbox json${slots ? ', singleton boolean' : ''}${
                     timers ? ', timers boolean' : ''
                   }${launch ? LAUNCH_COLUMNS : ''})
    LANGUAGE plpgsql VOLATILE ${slots ? 'SET plan_cache_mode = force_generic_plan ' : ''}AS $fn$
    #variable_conflict use_column
    BEGIN
      -- Creates the row if absent and locks it: admissions to one queue take turns here.
      INSERT INTO ${queues} AS q (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET updated_at = clock_timestamp();
      RETURN QUERY ${admitQuery(schema, slots, byId, timers, seeks, launch, keyLimits)};
    END
    $fn$`;
}

/** The function that takes slots again for woken runs of a `releaseWhileWaiting` queue. */
export const retakeFunction = (schema: string): string => qualify(schema, 'weft_queue_retake');

/**
 * $1 queue, $2 this engine's woken runs, $3 concurrency, $4 per-key concurrency. Under the queue's
 * lock, as admission: marks the runs as wanting a slot (once: the first wake keeps its place),
 * then, in a statement with a fresh snapshot, gives a slot to each of them whose place among all the
 * queue's wanting runs (oldest wake first) fits in the room the held slots leave, the queue's and
 * its key's. Returns the runs of $2 that may go on: granted, or not released (any more).
 */
export function retakeFunctionSql(schema: string): string {
  const wf = qualify(schema, 'weft_workflows');
  const queues = qualify(schema, 'weft_queues');
  const held = (cond: string) =>
    `(SELECT count(*)::int FROM ${wf} h WHERE h.queue = $1 AND h.status = 'running' AND h.slot_released_at IS NULL${cond})`;
  return `
    CREATE OR REPLACE FUNCTION ${retakeFunction(schema)}(text, varchar[], int, int)
    RETURNS TABLE (id text)
    LANGUAGE plpgsql VOLATILE AS $fn$
    #variable_conflict use_column
    BEGIN
      INSERT INTO ${queues} AS q (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET updated_at = clock_timestamp();
      UPDATE ${wf} w SET slot_wanted_at = clock_timestamp()
      WHERE w.id = ANY($2) AND w.queue = $1 AND w.status = 'running' AND w.slot_released_at IS NOT NULL AND w.slot_wanted_at IS NULL;
      RETURN QUERY
      WITH wanted AS (
        SELECT w.id, w.partition_key,
               row_number() OVER (ORDER BY w.slot_wanted_at, w.id) AS rn,
               row_number() OVER (PARTITION BY w.partition_key ORDER BY w.slot_wanted_at, w.id) AS krn
        FROM ${wf} w WHERE w.queue = $1 AND w.status = 'running' AND w.slot_wanted_at IS NOT NULL
      ),
      granted AS (
        SELECT wa.id FROM wanted wa
        WHERE wa.id = ANY($2)
          AND ($3::int IS NULL OR wa.rn <= $3::int - ${held('')})
          AND ($4::int IS NULL OR wa.partition_key IS NULL OR wa.krn <= $4::int - ${held(' AND h.partition_key = wa.partition_key')})
      ),
      taken AS (
        UPDATE ${wf} w SET slot_released_at = NULL, slot_wanted_at = NULL FROM granted g WHERE w.id = g.id RETURNING w.id
      )
      SELECT t.id::text FROM taken t
      UNION ALL
      SELECT x.id::text FROM unnest($2) AS x(id) WHERE NOT EXISTS (SELECT 1 FROM wanted wa WHERE wa.id = x.id);
    END
    $fn$`;
}
