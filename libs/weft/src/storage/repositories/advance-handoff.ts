// The CTEs of the advance statement's hand-off part (advance-parts.ts, ADVANCE_PARTS.handoff): a
// queued run's end commit gives its slot to the queue's next enqueued workflow in the same
// statement, where a one-for-one swap keeps every limit (docs/decisions/0042).
import { qualify } from '../schema-name.js';
import { queueNoticeSql } from '../talk-notice.js';
import { claimFreeSql } from './claim.repository.js';
import { notifyChannel } from './message.repository.js';

/** The hand-off part's CTEs (see ADVANCE_PARTS.handoff). */
export function handoffWrites(schema: string): string[] {
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  const ms = `* interval '1 millisecond'`;
  return [
    // The ending rows as they were before this statement: running in the queue that hands off. A
    // probe by key: as a join on the status, a generic plan made after an ANALYZE that saw no
    // running workflow read every running workflow for each ending one (docs/decisions/0056).
    `ho_from AS (
      SELECT ok.id, ok.handoff_queue AS q, ok.handoff_pick AS pick, ok.handoff_types AS types, ok.handoff_engine AS engine,
             ok.handoff_ttl AS ttl, ok.handoff_grace AS grace, ok.handoff_notifier AS notifier,
             row_number() OVER (PARTITION BY ok.handoff_queue ORDER BY ok.id) AS rn
      FROM ok
      WHERE ok.handoff_queue IS NOT NULL AND ok.status IN ('completed', 'failed', 'cancelled', 'timed_out')
        AND (SELECT x.queue = ok.handoff_queue AND x.status = 'running' FROM ${wf} x WHERE x.id = ok.id))`,
    `ho_need AS (
      SELECT DISTINCT ON (q) q, pick, types, engine, ttl, grace, notifier, count(*) OVER (PARTITION BY q) AS n FROM ho_from ORDER BY q)`,
    // The queue's highest priority with work (a backward probe of weft_workflows_enqueued_idx), FIFO inside it.
    `ho_pick AS (
      SELECT n.q, p.id, row_number() OVER (PARTITION BY n.q ORDER BY p.created_at, p.id) AS rn, n.engine, n.ttl, n.grace
      FROM ho_need n, LATERAL (
        SELECT w.id, w.created_at FROM ${wf} w
        WHERE n.pick AND w.queue = n.q AND w.status = 'enqueued' AND w.type = ANY(n.types)
          AND w.priority = (SELECT y.priority FROM ${wf} y WHERE y.queue = n.q AND y.status = 'enqueued' ORDER BY y.priority DESC LIMIT 1)
        ORDER BY w.created_at, w.id LIMIT n.n
        FOR UPDATE OF w SKIP LOCKED) p)`,
    // By id alone: ho_pick locked each row after checking its latest version is enqueued, and holds
    // it. A status condition here let the generic plan scan the whole enqueued index (every queue's
    // backlog) for the ids, the partial index matching it (docs/decisions/0045). The join alone, no
    // `id = ANY(ho_pick's ids)` beside it: with it, a generic plan made after an ANALYZE of a small
    // table read the whole table once per picked row (docs/decisions/0059).
    `ho_upd AS (
      UPDATE ${wf} w SET status = 'running', admitted_at = clock_timestamp(), updated_at = clock_timestamp(), version = w.version + 1,
             fence_epoch = CASE WHEN p.engine IS NULL THEN w.fence_epoch
                                ELSE COALESCE((SELECT cl.epoch FROM ${claims} cl WHERE cl.workflow_id = w.id), 0) + 1 END
      FROM ho_pick p WHERE w.id = p.id
      RETURNING w.id, w.type, w.input, w.parent_id, w.run_number, w.version, w.fence_epoch, w.singleton_key IS NOT NULL AS singleton,
                -- timer rows it may have (its deadline's; a delayed start's went when it fired): none, its end clears none
                w.deadline IS NOT NULL OR w.start_at IS NOT NULL AS timers, p.q, p.rn, p.engine, p.ttl, p.grace,
                -- what its start stored for its run, as the admission function returns it (docs/decisions/0046)
                w.headers, w.attributes, w.trace_context)`,
    `ho_claims AS (
      INSERT INTO ${claims} AS cl (workflow_id, epoch, engine_id, expires_at, claimed_at)
      SELECT h.id, 1, h.engine, clock_timestamp() + h.ttl ${ms}, clock_timestamp() FROM ho_upd h
      WHERE h.engine IS NOT NULL ORDER BY h.id
      ON CONFLICT (workflow_id) DO UPDATE SET epoch = cl.epoch + 1, engine_id = EXCLUDED.engine_id,
        expires_at = EXCLUDED.expires_at, claimed_at = EXCLUDED.claimed_at, version = cl.version + 1
      WHERE ${claimFreeSql(schema, 'cl', '(SELECT max(h.grace) FROM ho_upd h)')}
      RETURNING workflow_id, epoch::text AS epoch)`,
    // Built once (MATERIALIZED): inlined into the per-command lookup of the final SELECT, it built every
    // row's JSON once per command (2.4 → 1.2 ms a statement ending 14 runs).
    `ho_out AS MATERIALIZED (
      SELECT f.id AS from_id, json_build_object('id', h.id, 'type', h.type, 'input', h.input, 'parentId', h.parent_id,
        'runNumber', h.run_number, 'version', h.version, 'singleton', h.singleton, 'storedTimers', h.timers,
        'headers', h.headers, 'attributes', h.attributes, 'traceContext', h.trace_context,
        'claimEpoch', CASE WHEN ic.epoch = h.fence_epoch::text THEN ic.epoch END,
        'inbox', COALESCE((SELECT json_agg(json_build_object('id', m.id::text, 'kind', m.kind, 'name', m.name, 'payload', m.payload) ORDER BY m.id)
                           FROM ${qualify(schema, 'weft_messages')} m
                           WHERE m.workflow_id = h.id AND m.consumed_seq IS NULL AND m.status = 'pending'), '[]'::json)) AS ho_json
      FROM ho_from f JOIN ho_upd h ON h.q = f.q AND h.rn = f.rn LEFT JOIN ho_claims ic ON ic.workflow_id = h.id)`,
    // Whether work is left in each queue after the picks (this snapshot still reads them as enqueued).
    // Counted from the newest end of the queue's index range: its oldest end holds the entries of
    // every row admitted since the last vacuum, which a forward scan steps over (docs/decisions/0048).
    `ho_left AS (
      SELECT n.q, n.notifier, n.pick, (SELECT count(*) FROM (SELECT 1 FROM ${wf} w WHERE w.queue = n.q AND w.status = 'enqueued'
                                                             ORDER BY w.priority DESC, w.created_at DESC, w.id DESC LIMIT n.n + 1) d)
               > (SELECT count(*) FROM ho_upd h WHERE h.q = n.q) AS more,
             (SELECT count(*) FROM ho_upd h WHERE h.q = n.q) < n.n AS freed
      FROM ho_need n)`,
    // A slot freed while work is left although a pick was asked for (nothing this engine runs was
    // waiting): the other engines may run it. Without a pick the engine's own pass tries first.
    `ho_notified AS (
      SELECT count(pg_notify('${notifyChannel(schema)}', ${queueNoticeSql('l.q', 'l.notifier')})) AS n FROM ho_left l
      WHERE l.more AND l.freed AND l.pick)`,
  ];
}
