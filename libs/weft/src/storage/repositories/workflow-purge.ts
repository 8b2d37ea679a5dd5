// Purge and retention of weft_workflows: one ended workflow, or a batch of them, each deleted with
// its descendants (docs/decisions/0016). WorkflowRepository runs these statements.
import { LIVE_STATUSES, TERMINAL_STATUSES } from '../../common/types.js';

const sqlList = (statuses: readonly string[]) => statuses.map((s) => `'${s}'`).join(', ');
/** Statuses of a workflow that has not ended, and of one that has, as SQL lists. */
export const LIVE = sqlList(LIVE_STATUSES);
const ENDED = sqlList(TERMINAL_STATUSES);

/** `wf`: the qualified weft_workflows. */
export function purgeStatements(wf: string) {
  return {
    /** One engine's retention pass at a time, per schema; released with the transaction. */
    retentionLock: `SELECT pg_try_advisory_xact_lock(hashtext($1)) AS ok`,
    /**
     * Retention: ended workflows past their status's age ($1 statuses, $2 ages in ms), at most $3,
     * each with its descendants, whatever their own statuses' ages (docs/decisions/0016). A child
     * whose parent row is still there is never taken on its own: it goes with its parent, so a
     * parent id started again never meets an earlier run's child. A family with a workflow that
     * has not ended stays whole. Operations, messages and timers go by ON DELETE CASCADE; claim
     * rows have no foreign key and stay, so a purged id's next claim epoch still only grows.
     * UNION (not ALL) ends the walk on a cycle of reused ids.
     */
    purgeBatch: `
    WITH RECURSIVE roots AS (
      SELECT w.id FROM ${wf} w
      JOIN unnest($1::varchar[], $2::float8[]) AS r(status, keep_ms) ON w.status = r.status
      WHERE w.completed_at IS NOT NULL
        AND w.completed_at < clock_timestamp() - r.keep_ms * interval '1 millisecond'
        AND NOT EXISTS (SELECT 1 FROM ${wf} p WHERE p.id = w.parent_id)
        AND NOT EXISTS (SELECT 1 FROM ${wf} c WHERE c.parent_id = w.id AND c.status IN (${LIVE}))
      LIMIT $3
      FOR UPDATE OF w SKIP LOCKED
    ),
    family AS (
      SELECT id AS root, id FROM roots
      UNION
      SELECT f.root, c.id FROM ${wf} c JOIN family f ON c.parent_id = f.id
    ),
    kept AS (SELECT DISTINCT f.root FROM family f JOIN ${wf} x ON x.id = f.id WHERE x.status IN (${LIVE}))
    -- The status is judged again on each row as locked: one restarted meanwhile stays.
    DELETE FROM ${wf} WHERE id IN (SELECT id FROM family WHERE root NOT IN (SELECT root FROM kept))
      AND status IN (${ENDED}) RETURNING id`,
    /**
     * One workflow with its descendants, when it has ended, none of them is live and its parent is
     * not live; otherwise why not (live-children: any live descendant).
     */
    purgeOne: `
    WITH RECURSIVE family AS (
      SELECT id FROM ${wf} WHERE id = $1
      UNION
      SELECT c.id FROM ${wf} c JOIN family f ON c.parent_id = f.id
    ),
    locked AS (SELECT w.id, w.status, w.parent_id FROM ${wf} w WHERE w.id IN (SELECT id FROM family) ORDER BY w.id FOR UPDATE),
    target AS (SELECT id, status, parent_id FROM locked WHERE id = $1),
    blocked AS (
      SELECT t.id,
             t.status IN (${LIVE}) AS live,
             EXISTS (SELECT 1 FROM locked l WHERE l.id <> t.id AND l.status IN (${LIVE})) AS live_children,
             EXISTS (SELECT 1 FROM ${wf} p WHERE p.id = t.parent_id AND p.status IN (${LIVE})) AS live_parent
      FROM target t
    ),
    del AS (
      DELETE FROM ${wf} WHERE id IN (SELECT id FROM locked) AND status IN (${ENDED})
        AND EXISTS (SELECT 1 FROM blocked WHERE NOT live AND NOT live_children AND NOT live_parent)
      RETURNING id
    )
    SELECT b.live, b.live_children, b.live_parent, (SELECT count(*) FROM del)::int AS deleted,
           EXISTS (SELECT 1 FROM del WHERE del.id = $1) AS purged, t.status
    FROM blocked b JOIN target t ON t.id = b.id`,
  };
}
