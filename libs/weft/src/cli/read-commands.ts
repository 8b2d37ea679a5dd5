// The read commands: list, describe, history, engines. Everything goes through the repositories'
// read side (their own statements, or TypeORM's query builder over the same tables).
import { MoreThan, IsNull } from 'typeorm';
import { WorkflowNotFoundError } from '../common/errors.js';
import { kindLabel } from '../common/operation-kinds.js';
import type { ListInclude } from '../common/types.js';
import { decodeCursor } from '../engine/results.js';
import { listWorkflows } from '../engine/inspect.js';
import { CliUsageError } from './errors.js';
import { validateWorkflowId } from '../engine/validation.js';
import { failureText, filterOptions, intOption, iso, num, str, type Prepared, type Values } from './options.js';
import type { Mode, Session } from './session.js';
import { duration, keyValues, safe, table } from './table.js';

// --- list ---------------------------------------------------------------------------------------

export function list(v: Values): Prepared {
  const filter = filterOptions(v);
  const limit = intOption(v, 'limit', 1, 1000, 50);
  const order = str(v, 'order') ?? 'oldest';
  if (order !== 'newest' && order !== 'oldest') throw new CliUsageError(`--order must be newest or oldest (got "${safe(order)}")`);
  const include = ((v.include as string[] | undefined) ?? []).flatMap((s) => s.split(',')).map((s) => s.trim());
  for (const i of include)
    if (i !== 'input' && i !== 'output') throw new CliUsageError(`--include takes input and output (got "${safe(i)}")`);
  const cursor = str(v, 'after');
  if (cursor !== undefined) decodeCursor(cursor, order); // a bad cursor is bad usage, before any connection
  return async (session, io) => {
    // The engine's own list (engine/inspect.ts): the same filter, order and cursors as the API's.
    const page = await listWorkflows(session.store, {
      status: filter.statuses,
      type: filter.type,
      idPrefix: filter.idPrefix,
      attributes: filter.attributes,
      order,
      include: include as ListInclude[],
      limit,
      cursor,
    });
    const items = page.items.map((i) => ({
      ...i,
      createdAt: iso(i.createdAt),
      updatedAt: iso(i.updatedAt),
      completedAt: iso(i.completedAt),
    }));
    if (page.nextCursor) io.stderr.write(`More: add --after ${page.nextCursor}\n`);
    // Columns for attributes, input and output only when there is something to show.
    const extra = [...(items.some((i) => Object.keys(i.attributes).length) ? ['attributes' as const] : []), ...(include as ListInclude[])];
    const text = items.length
      ? table(
          ['id', 'type', 'status', 'created', 'updated', 'parent', ...extra],
          items.map((i) => [
            i.workflowId,
            i.type,
            i.status,
            i.createdAt,
            i.updatedAt,
            i.parentId,
            ...extra.map((k) => JSON.stringify(i[k] ?? null)),
          ]),
        )
      : 'No workflows match.\n';
    return { json: { items, nextCursor: page.nextCursor }, text };
  };
}

// --- describe -------------------------------------------------------------------------------------

const CHILDREN_SHOWN = 100;
const EVENTS_SHOWN = 100;

interface Holder {
  holder: string | null;
  epoch: string | null;
  expiresAt: string | null;
  /** By the database clock; negative once expired. */
  expiresInMs: number | null;
}

const holderOf = (r: Record<string, unknown> | undefined): Holder => ({
  holder: (r?.holder as string | null | undefined) ?? null,
  epoch: (r?.epoch as string | null | undefined) ?? null,
  expiresAt: iso(r?.expires_at as Date | null | undefined),
  expiresInMs: r?.expires_in_ms === null || r?.expires_in_ms === undefined ? null : Math.round(num(r.expires_in_ms)!),
});

function holderText(h: Holder): string {
  if (h.holder === null) return '-';
  const ms = h.expiresInMs ?? 0;
  return `${safe(h.holder)} (epoch ${h.epoch}, ${ms >= 0 ? `expires in ${duration(ms)}` : `expired ${duration(-ms)} ago`})`;
}

/** The global lease row (ownership 'lease'), or undefined when no lease engine ever ran. */
const readLease = (session: Session) =>
  session.lease
    .createQueryBuilder('l')
    .select('l.holder', 'holder')
    .addSelect('l.epoch::text', 'epoch')
    .addSelect('l.expiresAt', 'expires_at')
    .addSelect('EXTRACT(EPOCH FROM (l.expires_at - clock_timestamp())) * 1000', 'expires_in_ms')
    .getRawOne<Record<string, unknown>>();

/** Who runs the workflow: under 'lease' the lease holder, under 'workflow-lease' its claim's holder, under 'none' nobody says. */
async function ownerOf(session: Session, id: string): Promise<Holder & { mode: Mode }> {
  const mode = await session.mode();
  if (mode === 'none') return { mode, ...holderOf(undefined) };
  if (mode === 'lease') return { mode, ...holderOf(await readLease(session)) };
  const claim = await session.claims.read(id, 0);
  if (!claim) return { mode, ...holderOf(undefined) };
  // A claim that is not its workflow's fence names the holder of a run that ended: nobody holds it (docs/decisions/0011).
  if (claim.ended) return { mode, ...holderOf({ epoch: claim.epoch }) };
  return {
    mode,
    holder: claim.engineId,
    epoch: claim.epoch,
    expiresAt: iso(claim.expiresAt),
    expiresInMs: claim.expiresInMs,
  };
}

export function describe(args: string[]): Prepared {
  const id = validateWorkflowId(args[0]);
  return async (session) => {
    const row = await session.store.workflows.get(id);
    if (!row) throw new WorkflowNotFoundError(id);
    const [ownership, operations, children, childrenTotal, pendingMessages, events, eventsTotal] = await Promise.all([
      ownerOf(session, id),
      session.store.operations.countBy({ workflowId: id }),
      session.store.workflows.find({
        select: { id: true, type: true, status: true },
        where: { parentId: id },
        order: { createdAt: 'ASC', id: 'ASC' },
        take: CHILDREN_SHOWN,
      }),
      session.store.workflows.countBy({ parentId: id }),
      session.store.messages.countBy({ workflowId: id, status: 'pending', consumedSeq: IsNull() }),
      session.store.events.find({ where: { workflowId: id }, order: { key: 'ASC' }, take: EVENTS_SHOWN }),
      session.store.events.countBy({ workflowId: id }),
    ]);
    const json = {
      workflowId: row.id,
      type: row.type,
      status: row.status,
      runNumber: row.runNumber,
      version: row.version,
      workflowVersion: row.workflowVersion,
      parentId: row.parentId,
      createdAt: iso(row.createdAt),
      updatedAt: iso(row.updatedAt),
      completedAt: iso(row.completedAt),
      deadline: iso(row.deadline),
      startAt: iso(row.startAt),
      input: row.input ?? null,
      output: row.output ?? null,
      error: row.error ?? null,
      attributes: row.attributes ?? {},
      operations,
      pendingMessages,
      ownership,
      children: children.map((c) => ({ workflowId: c.id, type: c.type, status: c.status })),
      childrenTotal,
      events: events.map((e) => ({ key: e.key, value: e.value ?? null, updatedAt: iso(e.updatedAt) })),
      eventsTotal,
    };
    return { json, text: describeText(json) };
  };
}

function describeText(d: {
  workflowId: string;
  children: Array<{ workflowId: string; type: string; status: string }>;
  childrenTotal: number;
  events: Array<{ key: string; value: unknown; updatedAt: string | null }>;
  eventsTotal: number;
  ownership: Holder & { mode: Mode };
  [field: string]: unknown;
}): string {
  let text = keyValues([
    ['id', d.workflowId],
    ['type', d.type],
    ['status', d.status],
    ['run', d.runNumber],
    ['version', d.version],
    ['code version', d.workflowVersion],
    ['parent', d.parentId],
    ['created', d.createdAt],
    ['updated', d.updatedAt],
    ['completed', d.completedAt],
    ['deadline', d.deadline],
    ['start at', d.startAt],
    ['input', d.input],
    ['output', d.output],
    ['error', failureText(d.error)],
    ['attributes', d.attributes],
    ['operations', `${d.operations as number} (weft history ${safe(d.workflowId)})`],
    ['messages', `${d.pendingMessages as number} pending`],
    ['ownership', d.ownership.mode],
    ['owner', holderText(d.ownership)],
    ['children', d.childrenTotal],
  ]);
  if (d.children.length) {
    const rows = d.children.map((c) => [c.workflowId, c.type, c.status]);
    text += `\n${table(['child', 'type', 'status'], rows)}`;
  }
  if (d.childrenTotal > d.children.length) text += `(${d.childrenTotal - d.children.length} more children not shown)\n`;
  if (d.events.length)
    text += `\n${table(
      ['event', 'value', 'set'],
      d.events.map((e) => [e.key, e.value, e.updatedAt]),
    )}`;
  if (d.eventsTotal > d.events.length) text += `(${d.eventsTotal - d.events.length} more events not shown)\n`;
  return text;
}

// --- history --------------------------------------------------------------------------------------

export function history(args: string[], v: Values): Prepared {
  const id = validateWorkflowId(args[0]);
  const limit = intOption(v, 'limit', 1, 10_000, 1000);
  const after = intOption(v, 'after', 0, 2 ** 31 - 1, -1);
  return async (session, io) => {
    const row = await session.store.workflows.get(id);
    if (!row) throw new WorkflowNotFoundError(id);
    const ops = await session.store.operations.find({
      where: { workflowId: id, ...(after >= 0 ? { seq: MoreThan(after) } : {}) },
      order: { seq: 'ASC' },
      take: limit + 1,
    });
    const page = ops.slice(0, limit);
    const more = ops.length > limit;
    if (more) io.stderr.write(`More: add --after ${page[page.length - 1].seq}\n`);
    const items = await Promise.all(
      page.map(async (o) => ({
        seq: o.seq,
        kind: o.kind,
        name: o.name,
        status: o.status,
        attempts: o.attempts,
        startedAt: iso(o.startedAt),
        completedAt: iso(o.completedAt),
        durationMs: o.startedAt && o.completedAt ? o.completedAt.getTime() - o.startedAt.getTime() : null,
        result: (await session.payloads.decode(o.result)) ?? null, // decoded with --codec, else "[encrypted: ...]"
        error: o.error ?? null,
        event: o.event,
      })),
    );
    const text = items.length
      ? table(
          ['seq', 'kind', 'name', 'status', 'attempts', 'started', 'completed', 'took', 'result / error'],
          items.map((o) => [
            o.seq,
            kindLabel(o.kind),
            o.name,
            o.status,
            o.attempts,
            o.startedAt,
            o.completedAt,
            duration(o.durationMs),
            o.status === 'failed' ? failureText(o.error) : o.result,
          ]),
        )
      : `No operations recorded for "${safe(id)}" (status ${row.status}).\n`;
    return { json: { workflowId: id, status: row.status, operations: items, more }, text };
  };
}

// --- engines --------------------------------------------------------------------------------------

/** Engines holding claims, at most (one per replica: far more than a deployment runs). */
const ENGINES_LISTED = 10_000;

export function engines(v: Values): Prepared {
  const claimTtl = intOption(v, 'claim-ttl', 1, 24 * 3600 * 1000, 15_000);
  return async (session) => {
    const [mode, rows, lease] = await Promise.all([session.mode(), session.claims.engines(claimTtl, ENGINES_LISTED), readLease(session)]);
    const list = rows.map((e) => ({ ...e, latestExpiry: iso(e.latestExpiry) }));
    const leaseJson = lease ? holderOf(lease) : null;
    let text = `ownership: ${mode}\n`;
    if (mode === 'lease' || leaseJson) text += `global lease: ${leaseJson?.holder ? holderText(leaseJson) : 'not held'}\n`;
    text += '\n';
    text += list.length
      ? table(
          ['engine', 'claims', 'expired', 'last renewal', 'latest expiry'],
          list.map((e) => [e.engineId, e.claims, e.expiredClaims, `${duration(e.lastRenewalAgeMs)} ago`, e.latestExpiry]),
        )
      : 'No engine holds workflow claims.\n';
    return { json: { mode, claimTtlMs: claimTtl, engines: list, lease: leaseJson }, text };
  };
}
