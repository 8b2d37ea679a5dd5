// The advance of ONE workflow that records at most one operation and uses no part beyond the
// fence and a release: a step's record and a plain terminal commit, three of the four commits of
// a short workflow at low load. The same compare-and-swap as advanceSql (workflow-advance.ts),
// with the command as plain parameters instead of a JSON record set: parsing and joining the
// record set were about a sixth of such a commit's round trip (docs/performance.md).
import type { OperationRecord } from '../../common/types.js';
import { qualify } from '../schema-name.js';
import { jsonOrNullParam } from '../sql-client.js';
import type { AdvanceCommand } from '../types.js';
import { shapeBit, type AdvanceShape } from './workflow-advance.js';

/** The parts a lone record may use; any other part takes the general statement. */
const LONE_PARTS = shapeBit('ops') | shapeBit('fence') | shapeBit('release');

/** Whether a batch is one command that the lone statement can write, given the batch's shape key. */
export const isLoneRecord = (commands: AdvanceCommand[], shapeKey: number): boolean =>
  commands.length === 1 && (shapeKey & ~LONE_PARTS) === 0 && (commands[0].operations?.length ?? 0) <= 1;

/** The parameters, in order, with their types; a shape without a part has none of its parameters. */
const BASE = [
  ['id', 'text'],
  ['expected', 'int'],
  ['status', 'text'],
  ['set_output', 'boolean'],
  ['output', 'json'],
  ['set_error', 'boolean'],
  ['error', 'json'],
  ['completed', 'boolean'],
] as const;
const OP = [
  ['op_seq', 'int'],
  ['op_kind', 'text'],
  ['op_name', 'text'],
  ['op_status', 'text'],
  ['op_result', 'json'],
  ['op_error', 'json'],
  ['op_attempts', 'int'],
  ['op_started_at', 'timestamptz'],
  ['op_event', 'int'],
] as const;
const FENCE = [['fence_epoch', 'bigint']] as const;
/** Only a release names the engine: the claim row's holder must be the fence's. */
const RELEASE = [['fence_engine', 'text']] as const;

type Field = (typeof BASE | typeof OP | typeof FENCE | typeof RELEASE)[number][0];

// A shape's release bit implies its fence bit (SHAPE_TESTS in workflow-advance.ts): a release
// is judged against the fence, so an unfenced command never releases.
function fieldsOf(shape: AdvanceShape): ReadonlyArray<readonly [Field, string]> {
  return [...BASE, ...(shape.ops ? OP : []), ...(shape.fence ? FENCE : []), ...(shape.release ? RELEASE : [])];
}

/**
 * The lone statement for `shape` (parts among ops, fence, release). Each part does what the
 * general statement's part of the same name does for a batch of one; hot-path-plans.spec.ts and
 * advance-lone.spec.ts hold the two to the same outcomes.
 */
export function loneAdvanceSql(schema: string, shape: AdvanceShape): string {
  const wf = qualify(schema, 'weft_workflows');
  const claims = qualify(schema, 'weft_workflow_claims');
  const fields = fieldsOf(shape);
  const p = (name: Field) => {
    const i = fields.findIndex(([n]) => n === name);
    if (i < 0) throw new Error(`lone advance: no parameter ${name} in this shape`);
    return `$${i + 1}::${fields[i][1]}`;
  };
  const parts: string[] = [];
  if (shape.release) {
    // Locked before the workflow row, as the general statement and the claim handovers do.
    parts.push(`claim_rows AS (
      SELECT cl.workflow_id, cl.engine_id, cl.epoch FROM ${claims} cl
      WHERE cl.workflow_id = ${p('id')} FOR NO KEY UPDATE OF cl)`);
  }
  const conditions = [
    ...(shape.fence ? [`w.fence_epoch = ${p('fence_epoch')}`] : []),
    ...(shape.release ? ['(SELECT count(*) FROM claim_rows) >= 0'] : []),
  ];
  const holds = shape.release
    ? `EXISTS (SELECT 1 FROM claim_rows r WHERE r.engine_id = ${p('fence_engine')} AND r.epoch = ${p('fence_epoch')})`
    : '';
  // As fenceClearSql in workflow-advance.ts: the end of the run, or a release of the claim held, clears the fence.
  const clears = [...(shape.fence ? [p('completed')] : []), ...(shape.release ? [holds] : [])];
  const fenceClear = clears.length ? `\n        fence_epoch = CASE WHEN ${clears.join(' OR ')} THEN NULL ELSE w.fence_epoch END,` : '';
  parts.push(`upd AS (
      UPDATE ${wf} w SET
        status = COALESCE(${p('status')}, w.status),
        output = CASE WHEN ${p('set_output')} THEN ${p('output')} ELSE w.output END,
        error = CASE WHEN ${p('set_error')} THEN ${p('error')} ELSE w.error END,
        completed_at = CASE WHEN ${p('completed')} THEN clock_timestamp() ELSE w.completed_at END,
        updated_at = clock_timestamp(),${fenceClear}
        version = w.version + 1
      WHERE w.id = ${p('id')} AND w.version = ${p('expected')}${conditions.map((c) => ` AND ${c}`).join('')}
      RETURNING w.id, w.version)`);
  if (shape.ops) {
    parts.push(`ins_ops AS (
      INSERT INTO ${qualify(schema, 'weft_operations')} (workflow_id, seq, kind, name, status, result, error, attempts, started_at, event)
      SELECT upd.id, ${p('op_seq')}, ${p('op_kind')}, ${p('op_name')}, ${p('op_status')}, ${p('op_result')}, ${p('op_error')},
        COALESCE(${p('op_attempts')}, 1), ${p('op_started_at')}, ${p('op_event')}
      FROM upd)`);
  }
  if (shape.release) {
    parts.push(`rel AS (
      UPDATE ${claims} cl SET engine_id = NULL, expires_at = NULL, claimed_at = NULL, version = cl.version + 1
      FROM upd, claim_rows r
      WHERE cl.workflow_id = ${p('id')} AND r.engine_id = ${p('fence_engine')} AND r.epoch = ${p('fence_epoch')})`);
  }
  // As the general statement: a refused command says whether its fence had moved, read from the snapshot.
  const fenced = shape.fence
    ? `(upd.id IS NOT NULL OR COALESCE((SELECT x.fence_epoch FROM ${wf} x WHERE x.id = ${p('id')}) = ${p('fence_epoch')}, false))`
    : 'true';
  return `WITH ${parts.join(',\n')}
    SELECT ${p('id')} AS id, upd.version, ${fenced} AS fenced, true AS consumed
    FROM (SELECT 1) one LEFT JOIN upd ON true`;
}

const OPS = shapeBit('ops');
const FENCED = shapeBit('fence');
const RELEASES = shapeBit('release');

/** The lone statement's parameters for `c` (of shape key `shapeKey`), in the order of its shape's fields. */
export function loneAdvanceParams(c: AdvanceCommand, shapeKey: number): unknown[] {
  const out = rowParams(c);
  if (shapeKey & OPS) out.push(...opParams(c.operations?.[0]));
  if (shapeKey & FENCED) out.push(c.fence?.epoch ?? null);
  if (shapeKey & RELEASES) out.push(c.fence?.engineId ?? null);
  return out;
}

/** What the versioned UPDATE sets (BASE); a NULL flag is "not asked for", as in the general statement. */
function rowParams(c: AdvanceCommand): unknown[] {
  return [
    c.workflowId,
    c.expectedVersion,
    c.status ?? null,
    c.output !== undefined ? true : null,
    c.output !== undefined ? jsonOrNullParam(c.output.value) : null,
    c.error !== undefined ? true : null,
    c.error !== undefined ? jsonOrNullParam(c.error.value) : null,
    c.completed ? true : null,
  ];
}

function opParams(o: OperationRecord | undefined): unknown[] {
  if (!o) throw new Error('lone advance: a shape with ops needs the operation');
  return [
    o.seq,
    o.kind,
    o.name,
    o.status,
    jsonOrNullParam(o.result),
    jsonOrNullParam(o.error),
    o.attempts ?? null,
    o.startedAt ?? null,
    o.event ?? null,
  ];
}
