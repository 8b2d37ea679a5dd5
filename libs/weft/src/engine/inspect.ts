import { InvalidArgumentError, WorkflowNotFoundError } from '../common/errors.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { decodeCursor, encodeCursor } from './results.js';
import { WORKFLOW_STATUSES } from '../common/types.js';
import type {
  ListFilter,
  ListInclude,
  ListPage,
  WorkflowDescription,
  WorkflowFailure,
  WorkflowStatus,
  WorkflowSummary,
} from '../common/types.js';
import type { WorkflowRow } from '../storage/types.js';
import { attributeQuery } from './attribute-filter.js';
import { validateName, validateWorkflowId } from './validation.js';

/** Read-only views: describe and list. */
export async function describeWorkflow(store: WorkflowStore, workflowId: string): Promise<WorkflowDescription> {
  validateWorkflowId(workflowId);
  // The row first, then the history: read in parallel, a row already ended could be paired with
  // a history read before its final commit. In this order an ended row's history is complete.
  const row = await store.workflows.get(workflowId);
  if (!row) throw new WorkflowNotFoundError(workflowId);
  const history = await store.operations.history(workflowId);
  const events = await store.events.list(workflowId);
  return {
    workflowId: row.id,
    type: row.type,
    status: row.status,
    input: row.input,
    output: row.output,
    error: (row.error as WorkflowFailure | null) ?? null,
    parentId: row.parentId,
    runNumber: row.runNumber,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    completedAt: row.completedAt,
    deadline: row.deadline,
    startAt: row.startAt,
    version: row.version,
    workflowVersion: row.workflowVersion,
    queue: row.queue,
    priority: row.priority,
    admittedAt: row.admittedAt,
    attributes: row.attributes ?? {},
    forkedFrom: row.forkedFrom ?? null,
    retriedFrom: row.retriedFrom ?? null,
    history,
    events,
  };
}

const FILTER_KEYS = ['status', 'type', 'idPrefix', 'attributes', 'order', 'include', 'limit', 'cursor'];
const INCLUDES = ['input', 'output'];

/** The statuses asked for, each one a real status (a typo would otherwise list nothing). */
function statusesOf(status: unknown): WorkflowStatus[] | undefined {
  if (status === undefined) return undefined;
  const statuses: unknown[] = Array.isArray(status) ? status : [status];
  const valid = `one of ${WORKFLOW_STATUSES.join(', ')} (or an array of them)`;
  if (statuses.length === 0) throw new InvalidArgumentError('status', `must name at least one status: ${valid}`);
  for (const s of statuses) {
    if (!WORKFLOW_STATUSES.includes(s as WorkflowStatus))
      throw new InvalidArgumentError('status', `has ${JSON.stringify(s)}, which is not a status; use ${valid}`);
  }
  return statuses as WorkflowStatus[];
}

/** The filter checked, as the repository's query (everything but limit and cursor). */
function checkedFilter(filter: ListFilter) {
  if (filter === null || typeof filter !== 'object')
    throw new InvalidArgumentError('filter', `must be an object with ${FILTER_KEYS.join(', ')}`);
  for (const [key, value] of Object.entries(filter)) {
    if (!FILTER_KEYS.includes(key) && value !== undefined)
      throw new InvalidArgumentError(key, `is not a list filter; use ${FILTER_KEYS.join(', ')}`);
  }
  if (filter.type !== undefined) validateName('type', filter.type);
  if (filter.idPrefix !== undefined) validateName('idPrefix', filter.idPrefix); // 1 to 255 characters, like the ids
  const order = filter.order ?? 'oldest';
  if (order !== 'newest' && order !== 'oldest') throw new InvalidArgumentError('order', 'must be "newest" or "oldest"');
  return {
    order,
    statuses: statusesOf(filter.status),
    type: filter.type,
    idPrefix: filter.idPrefix,
    attributes: attributeQuery(filter.attributes),
    include: includesOf(filter.include),
  };
}

export async function listWorkflows(store: WorkflowStore, filter: ListFilter): Promise<ListPage> {
  const { order, ...query } = checkedFilter(filter);
  const limit = filter.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new InvalidArgumentError('limit', 'must be an integer from 1 to 1000');
  const after = filter.cursor ? decodeCursor(filter.cursor, order) : undefined;
  const rows = await store.workflows.list({ ...query, newest: order === 'newest', after, limit: limit + 1 });
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map((r) => summaryOf(r, query.include)),
    nextCursor: rows.length > limit && last ? encodeCursor(last, order) : null,
  };
}

function summaryOf(r: WorkflowRow, include: ListInclude[]): WorkflowSummary {
  const item: WorkflowSummary = {
    workflowId: r.id,
    type: r.type,
    status: r.status,
    parentId: r.parentId,
    runNumber: r.runNumber,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    completedAt: r.completedAt,
    workflowVersion: r.workflowVersion,
    queue: r.queue,
    priority: r.priority,
    attributes: r.attributes ?? {},
    forkedFrom: r.forkedFrom ?? null,
    retriedFrom: r.retriedFrom ?? null,
  };
  if (include.includes('input')) item.input = r.input ?? null;
  if (include.includes('output')) item.output = r.status === 'completed' ? (r.output ?? null) : null;
  return item;
}

function includesOf(include: unknown): ListInclude[] {
  if (include === undefined) return [];
  if (!Array.isArray(include) || include.some((i) => !INCLUDES.includes(i as string)))
    throw new InvalidArgumentError('include', `must be an array of ${INCLUDES.map((i) => `"${i}"`).join(', ')}`);
  return [...new Set(include as ListInclude[])];
}
