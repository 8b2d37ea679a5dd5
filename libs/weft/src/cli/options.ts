// What the commands share: their I/O, the option checks, and the workflow filter as a query.
import { validateName, validateReason } from '../engine/validation.js';
import { attributeQuery, parseWhere } from '../engine/attribute-filter.js';
import { attributePredicates } from '../storage/repositories/workflow-list.js';
import type { AttributeFilter } from '../common/types.js';
import { LIVE_STATUSES, WORKFLOW_STATUSES, WorkflowStatus } from '../common/types.js';
import type { Parsed } from './args.js';
import { CliUsageError } from './errors.js';
import type { Session } from './session.js';
import { cell, safe } from './table.js';

export interface CliIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown; isTTY?: boolean };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  env: Record<string, string | undefined>;
}

/** What a command prints: `json` with --json, `text` otherwise (both on stdout). */
export interface Output {
  json: unknown;
  text: string;
  /** Exit code 1 although the command ran (a bulk cancel with failures). */
  failed?: boolean;
}

export type Prepared = (session: Session, io: CliIo, json: boolean) => Promise<Output>;

export const STATUSES = WORKFLOW_STATUSES;
export const LIVE: WorkflowStatus[] = [...LIVE_STATUSES];
/** The engine's own payload default (maxPayloadBytes). */
export const MAX_PAYLOAD_BYTES = 1024 * 1024;
export const BULK_PAGE = 200;
export const BULK_CONCURRENCY = 8;

export type Values = Parsed['values'];
export const str = (v: Values, k: string) => v[k] as string | undefined;

export function intOption(v: Values, k: string, min: number, max: number, fallback: number): number {
  const raw = str(v, k);
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < min || n > max)
    throw new CliUsageError(`--${k} must be an integer from ${min} to ${max} (got "${safe(raw)}")`);
  return n;
}

export function statusOption(v: Values): WorkflowStatus[] | undefined {
  const raw = v.status as string[] | undefined;
  if (!raw) return undefined;
  const list = raw.flatMap((s) => s.split(',')).map((s) => s.trim());
  for (const s of list) {
    if (!STATUSES.includes(s as WorkflowStatus)) throw new CliUsageError(`--status "${safe(s)}" is not one of ${STATUSES.join(', ')}`);
  }
  return [...new Set(list)] as WorkflowStatus[];
}

/** Checked as the engine checks it, before anything is counted or confirmed. */
export function reasonOption(v: Values): string | undefined {
  const reason = str(v, 'reason');
  return reason === undefined ? undefined : validateReason('--reason', reason);
}

export interface Filter {
  statuses?: WorkflowStatus[];
  type?: string;
  idPrefix?: string;
  /** --where, as list({ attributes }) takes it. */
  attributes?: AttributeFilter;
}

export function filterOptions(v: Values): Filter {
  const type = str(v, 'type');
  const idPrefix = str(v, 'id-prefix');
  if (type !== undefined) validateName('--type', type);
  if (idPrefix !== undefined) validateName('--id-prefix', idPrefix); // as engine.list() checks it: "." may begin ids
  const where = v.where as string[] | undefined;
  const attributes = where?.length ? parseWhere(where) : undefined;
  attributeQuery(attributes); // checked now: a bad condition is bad usage, before any connection
  return { statuses: statusOption(v), type, idPrefix, attributes };
}

/** Any of the bulk filters given. */
export const hasFilter = (v: Values) =>
  v.type !== undefined || v.status !== undefined || v['id-prefix'] !== undefined || v.where !== undefined;

const likePrefix = (p: string) => `${p.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** The workflows matching `f`, as a query builder over weft_workflows (the repository's own read side). */
export function matching(session: Session, f: Filter) {
  const qb = session.store.workflows.createQueryBuilder('w');
  if (f.statuses?.length) qb.andWhere('w.status IN (:...statuses)', { statuses: f.statuses });
  if (f.type !== undefined) qb.andWhere('w.type = :type', { type: f.type });
  if (f.idPrefix !== undefined) qb.andWhere(`w.id LIKE :prefix ESCAPE '\\'`, { prefix: likePrefix(f.idPrefix) });
  const attributes = attributeQuery(f.attributes);
  if (attributes) {
    const params: Record<string, unknown> = {};
    const p = (value: unknown) => {
      const name = `attr${Object.keys(params).length}`;
      params[name] = value;
      return `:${name}`;
    };
    for (const predicate of attributePredicates(attributes, p, 'w.attributes')) qb.andWhere(predicate);
    qb.setParameters(params);
  }
  return qb;
}

export const iso = (d: Date | string | null | undefined) => (d === null || d === undefined ? null : new Date(d).toISOString());
export const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export function failureText(error: unknown): string | null {
  if (error === null || error === undefined) return null;
  const e = error as { name?: unknown; message?: unknown };
  if (typeof e.message === 'string') return `${typeof e.name === 'string' ? `${e.name}: ` : ''}${e.message}`;
  return cell(error);
}
