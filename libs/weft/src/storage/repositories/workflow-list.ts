// The text of WorkflowRepository.list: a fixed part (status, type, id prefix, the keyset
// position) and one predicate per attribute condition. Only the shape comes from the filter;
// keys and values are parameters, never spliced into the text.
import { qualify } from '../schema-name.js';
import type { AttributeQuery } from '../types.js';
import type { WorkflowStatus } from '../../common/types.js';

export interface ListQuery {
  statuses?: WorkflowStatus[];
  type?: string;
  /** Ids starting with this text (compared as text, not as a LIKE pattern). */
  idPrefix?: string;
  attributes?: AttributeQuery;
  newest?: boolean;
  include?: Array<'input' | 'output'>;
  after?: { at: string; id: string };
  limit: number;
}

/**
 * Timestamps are compared as the text Dates are stored as (`toISOString()`), which sorts in time
 * order; a value of another form is not a timestamp and meets no range, and no cast can fail.
 */
const ISO_UTC = `'^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$'`;

/**
 * The predicates of an attribute query over `column`; `p` makes a parameter of a value and
 * returns its placeholder (positional here, named in the CLI's query builder).
 */
export function attributePredicates(a: AttributeQuery, p: (v: unknown) => string, column = 'attributes'): string[] {
  // Stated, so the planner matches the partial GIN index (attributes IS NOT NULL) by its text.
  const where = [`${column} IS NOT NULL`];
  for (const group of a.contains) {
    where.push(
      group.length === 1
        ? `${column} @> CAST(${p(JSON.stringify(group[0]))} AS jsonb)`
        : `${column} @> ANY(CAST(${p(group.map((o) => JSON.stringify(o)))} AS jsonb[]))`,
    );
  }
  for (const r of a.ranges) {
    const key = `CAST(${p(r.key)} AS text)`;
    where.push(
      r.on === 'number'
        ? `(CASE WHEN jsonb_typeof(${column} -> ${key}) = 'number' THEN CAST(${column} -> ${key} AS numeric) END) ${r.op} CAST(${p(r.value)} AS numeric)`
        : `(CASE WHEN ${column} ->> ${key} ~ ${ISO_UTC} THEN ${column} ->> ${key} END) COLLATE "C" ${r.op} CAST(${p(r.value)} AS text) COLLATE "C"`,
    );
  }
  return where;
}

export function listStatement(schema: string, q: ListQuery): { sql: string; params: unknown[] } {
  const wf = qualify(schema, 'weft_workflows');
  const params: unknown[] = [
    q.statuses?.length ? q.statuses : null,
    q.type ?? null,
    q.after?.at ?? null,
    q.after?.id ?? null,
    q.limit,
    q.idPrefix ?? null,
  ];
  const p = (v: unknown) => `$${params.push(v)}`;
  const where = q.attributes ? attributePredicates(q.attributes, p) : [];
  const cmp = q.newest ? '<' : '>';
  const dir = q.newest ? 'DESC' : 'ASC';
  const extra = (['input', 'output'] as const).filter((c) => q.include?.includes(c));
  const columns = `id, type, status, parent_id, run_number, created_at, updated_at, completed_at, version, workflow_version, queue,
                priority, attributes, forked_from, retried_from${extra.map((c) => `, ${c}`).join('')}, created_at::text AS cursor_at`;
  const filtered = `FROM ${wf}
         WHERE ($1::varchar[] IS NULL OR status = ANY($1)) AND ($2::varchar IS NULL OR type = $2)
           AND ($3::timestamptz IS NULL OR (created_at, id) ${cmp} ($3::timestamptz, $4))
           AND ($6::varchar IS NULL OR left(id, char_length($6)) = $6)${where.map((w) => `\n           AND ${w}`).join('')}`;
  const order = `ORDER BY created_at ${dir}, id ${dir} LIMIT $5`;
  // With an equality or an `in`, the GIN index finds the matches and the page is sorted from them.
  // Without the fence (OFFSET 0: planned without the LIMIT), at 1,000,000 rows the planner walked
  // the creation-time index instead, filtering rows until it had a page: 140 ms for one tenant of
  // 1,000 (bench/attributes.ts). A filter matching most rows pays a sort of them instead.
  const sql = q.attributes?.contains.length
    ? `SELECT * FROM (SELECT ${columns} ${filtered} OFFSET 0) matched ${order}`
    : `SELECT ${columns} ${filtered} ${order}`;
  return { sql, params };
}
