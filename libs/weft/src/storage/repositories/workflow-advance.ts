// The advance statement: one statement commits a batch of workflows' advances (group commit),
// each with its own version check and fence. Its text (one per shape), its parameter and the
// mapping of its rows are here; WorkflowRepository runs it. Here is its frame: the record set,
// the locks taken before the versioned UPDATE, the UPDATE and its refusals' reasons. Each part's
// columns, record, the row columns it sets and the rows it writes after the UPDATE are in its
// description (advance-parts.ts).
import { qualify } from '../schema-name.js';
import type { AdmittedWorkflow, AdvanceCommand, AdvanceOutcome } from '../types.js';
import { commandColumns, PART_NAMES, partReturns, partSets, partWrites, toCommandJson, type AdvanceShape } from './advance-shapes.js';

/**
 * Every join against a table also filters on the batch's ids: json_to_recordset is estimated at
 * 100 rows, and a generic plan made while a table was small would otherwise hash join over a
 * sequential scan of it on every commit (1 ms at 5k rows, worse as tables grow). A batch of one
 * command (every commit at low load) names its id as a parameter ($2): an array of unknown length
 * is estimated at 10 ids, for which a generic plan still scans a table of a few thousand rows
 * (0.4 ms of a 0.6 ms statement at 3,000 workflows), while one id is always an index probe.
 */
const inBatch = (single: boolean) => (single ? '= $2::text' : '= ANY(ARRAY(SELECT id FROM cmd))');

/** Every message the command consumes is still pending (locked by `locked`). */
const CONSUMED = '(c.consume IS NULL OR json_array_length(c.consume) = (SELECT count(*) FROM locked l WHERE l.workflow_id = c.id))';

/**
 * The row's fence_epoch after the command: NULL once nothing may write under the claim any more,
 * i.e. a rotation, a release of the claim this command holds, or the end of the run (a terminal
 * commit clears the fence and leaves the claim row as it is: docs/decisions/0011).
 */
function fenceClearSql(shape: AdvanceShape, claimWrite: boolean): string {
  const clears = [
    ...(shape.fence ? ['c.completed'] : []),
    ...(claimWrite
      ? [
          `c.rotate OR (c.release AND EXISTS (SELECT 1 FROM claim_rows r
                             WHERE r.workflow_id = c.id AND r.engine_id = c.fence_engine AND r.epoch = c.fence_epoch))`,
        ]
      : []),
  ];
  if (clears.length === 0) return '';
  return `
        fence_epoch = CASE WHEN ${clears.join(' OR ')} THEN NULL ELSE w.fence_epoch END,`;
}

/**
 * The checkpoint compare-and-swap: ONE statement whose data-modifying CTEs only write for the
 * workflows whose versioned UPDATE matched, so an advance costs one round trip and one
 * implicit transaction, a lost race writes nothing, and many workflows' advances can share the
 * statement (group commit). Parts a batch does not use are left out: planning and running the
 * full statement costs about twice the lean one. See docs/decisions/0001.
 */
export function advanceSql(schema: string, shape: AdvanceShape, single = false): string {
  const wf = qualify(schema, 'weft_workflows');
  const ids = inBatch(single);
  const parts: string[] = [
    `cmd AS (
      SELECT * FROM json_to_recordset($1::json) AS c(
${commandColumns(shape, '        ')}))`,
  ];
  const conditions: string[] = [];
  const guards: string[] = [];
  // A claim row is locked before its workflow row, in ONE sweep in id order, as renewal and the
  // claim handovers lock them: a statement that rotates or releases a claim takes the rows FOR NO
  // KEY UPDATE up front (two ordered sweeps, one after the other, deadlock with a renewal that
  // locks the same rows in one).
  const claimWrite = shape.release || shape.rotate;
  if (claimWrite) {
    // Only the commands that release or rotate are looked up: in a batch most commands are a
    // step's record, and probing their claims too was most of this part's index reads.
    const claimIds = single ? ids : '= ANY(ARRAY(SELECT id FROM cmd WHERE release OR rotate))';
    parts.push(`claim_rows AS (
      SELECT cl.workflow_id, cl.engine_id, cl.epoch FROM ${qualify(schema, 'weft_workflow_claims')} cl JOIN cmd c ON cl.workflow_id = c.id
      WHERE cl.workflow_id ${claimIds} AND (c.release OR c.rotate)
      ORDER BY cl.workflow_id FOR NO KEY UPDATE OF cl)`);
    // Always true; it makes the locks a step of the UPDATE that runs before its first row.
    guards.push('(SELECT count(*) FROM claim_rows) >= 0');
  }
  // The fence: every statement that hands a claim to a new holder sets the row's fence_epoch in
  // the same statement, so the versioned UPDATE fences by itself, judged on the row as locked
  // (after waiting for a takeover, PostgreSQL re-checks its latest version). No claim-row lock,
  // no WAL record for one, on a commit (docs/decisions/0008).
  const fenced: string[] = [];
  if (shape.fence) {
    conditions.push('(c.fence_epoch IS NULL OR w.fence_epoch = c.fence_epoch)');
    // Why a refused command was refused, read from the statement's snapshot: a takeover that
    // committed while this statement waited reads as a version conflict, and the reload that
    // follows checks the epoch again (Runtime.loadAndLaunch). A scalar subquery, evaluated only
    // for a refused command: written as EXISTS, the planner made it a hashed subplan that read
    // all of weft_workflows on every commit (hot-path-plans.spec.ts).
    fenced.push(`(c.fence_epoch IS NULL OR upd.id IS NOT NULL
      OR COALESCE((SELECT x.fence_epoch FROM ${wf} x WHERE x.id = c.id) = c.fence_epoch, false))`);
  }
  if (shape.lease) {
    // Under ownership 'lease' every write needs the global lease at the writer's epoch.
    parts.push(`lease_ok AS (
      SELECT l.holder, l.epoch FROM ${qualify(schema, 'weft_global_lease')} l
      WHERE l.id = 1 AND l.holder IS NOT NULL FOR SHARE OF l)`);
    const leaseOk =
      '(c.lease_engine IS NULL OR EXISTS (SELECT 1 FROM lease_ok lo WHERE lo.holder = c.lease_engine AND lo.epoch = c.lease_epoch))';
    conditions.push(leaseOk);
    fenced.push(leaseOk);
  }
  if (shape.consume) {
    // Messages are consumed exactly once: lock them, and refuse the whole advance if any is
    // no longer pending (consumed elsewhere, or an update whose caller gave up).
    parts.push(`locked AS (
      SELECT m.id, m.workflow_id FROM ${qualify(schema, 'weft_messages')} m
      JOIN (SELECT c.id AS wid, x.id AS mid FROM cmd c, json_to_recordset(c.consume) AS x(id bigint)) q
        ON m.id = q.mid AND m.workflow_id = q.wid
      WHERE m.workflow_id ${ids} AND m.consumed_seq IS NULL AND m.status = 'pending'
      FOR UPDATE OF m)`);
    guards.push(CONSUMED);
  }
  parts.push(`upd AS (
      UPDATE ${wf} w SET
        status = COALESCE(c.status, w.status),
        output = CASE WHEN c.set_output THEN c.output ELSE w.output END,
        error = CASE WHEN c.set_error THEN c.error ELSE w.error END,
        completed_at = CASE WHEN c.completed THEN clock_timestamp() ELSE w.completed_at END,
        updated_at = clock_timestamp(),${partSets(shape)}${fenceClearSql(shape, claimWrite)}
        version = w.version + 1
      FROM cmd c
      WHERE w.id ${ids} AND w.id = c.id AND ${versionCheck(shape)} ${[...conditions, ...guards].map((x) => `AND ${x}`).join(' ')}
      RETURNING w.id, w.version)`);
  // What each part writes, for the commands whose versioned UPDATE matched (the `ok` rows).
  const writes = PART_NAMES.filter((k) => shape[k]).flatMap((k) => partWrites(k, { schema, continues: shape.cont, ids }));
  if (writes.length) parts.push(`ok AS (SELECT c.* FROM cmd c JOIN upd ON upd.id = c.id)`, ...writes);
  return `WITH ${parts.join(',\n')}
    SELECT c.id, upd.version, ${fenced.length ? fenced.join(' AND ') : 'true'} AS fenced, ${shape.consume ? CONSUMED : 'true'} AS consumed${partReturns(shape)}
    FROM cmd c LEFT JOIN upd ON upd.id = c.id`;
}

/**
 * The compare-and-swap of a command. An external transition (`if_status`) is judged on the row as
 * locked, not as it was read: if the run committed meanwhile, PostgreSQL re-checks the status on
 * the row's latest version, so a cancel is not refused because a busy run keeps moving the
 * version (docs/ownership.md, "What the protocol guarantees").
 */
function versionCheck(shape: AdvanceShape): string {
  return shape.byStatus
    ? '(CASE WHEN c.if_status IS NULL THEN w.version = c.expected ELSE w.status = c.if_status END)'
    : 'w.version = c.expected';
}

/** The parameters: the batch as JSON, in the order given (callers sort by id), and a lone command's id (`advanceSql(..., single)`). */
export const advanceParams = (commands: AdvanceCommand[]): string[] =>
  commands.length === 1
    ? [JSON.stringify([toCommandJson(commands[0])]), commands[0].workflowId]
    : [JSON.stringify(commands.map(toCommandJson))];

export interface AdvanceRow {
  id: string;
  version: number | null;
  fenced: boolean;
  consumed: boolean;
  /** The workflow the command's end handed its queue slot to (the hand-off part). */
  handoff?: AdmittedWorkflow | null;
  /** Whether the queue it ended in has work left (the hand-off part; null: not a queued end). */
  handoff_more?: boolean | null;
}

/** Each command's outcome from the statement's rows: committed, or refused by fence, consumption or version. */
export function advanceOutcomes(commands: AdvanceCommand[], rows: AdvanceRow[]): AdvanceOutcome[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  return commands.map((c): AdvanceOutcome => {
    const r = byId.get(c.workflowId);
    if (r && r.version !== null) {
      if (r.handoff_more === undefined || r.handoff_more === null) return { workflowId: c.workflowId, ok: true, version: r.version };
      const to = r.handoff ? { ...r.handoff, inbox: r.handoff.inbox ?? [] } : null;
      return { workflowId: c.workflowId, ok: true, version: r.version, handoff: { to, more: r.handoff_more } };
    }
    const reason = r && !r.fenced ? 'fence' : r && r.consumed === false ? 'consume' : 'version';
    return { workflowId: c.workflowId, ok: false, reason };
  });
}
