import { Get, Inject, Param, Query, UseFilters } from '@nestjs/common';
import { MoreThan } from 'typeorm';
import { InvalidArgumentError, WorkflowNotFoundError } from '../../common/errors.js';
import type { EngineHealthSnapshot, WorkflowStatus } from '../../common/types.js';
import { WeftEngine } from '../../engine/engine.js';
import { MAX_PARTITIONS_SHOWN } from '../../engine/queues/partition-view.js';
import { validateWorkflowId } from '../../engine/validation.js';
import { ClaimRepository, type EngineClaims } from '../../storage/repositories/claim.repository.js';
import { LeaseRepository } from '../../storage/repositories/lease.repository.js';
import { WEFT_MODULE_EXTRAS } from '../weft.constants.js';
import type { WeftModuleExtras } from '../weft-module.options.js';
import { exposeErrorStacks, withoutStacks } from './http-options.js';
import { objectBody } from './requests.js';
import { WeftExceptionFilter } from './weft-exception.filter.js';

// What an operator page needs beyond describe/list: one workflow's timeline with times, messages,
// children and claim in one answer, and the engines with their claims. Read-only; every list bounded.

const MESSAGES_SHOWN = 200;
const CHILDREN_SHOWN = 100;
const EVENTS_SHOWN = 200;
const STREAMS_SHOWN = 200;
const ENGINES_SHOWN = 1000;
/** A recorded value longer than this (as JSON) is sent as a preview: one answer stays small. */
const PREVIEW_CHARS = 4096;

export interface Preview {
  truncated: true;
  /** Length of the whole value as JSON text. */
  length: number;
  preview: string;
}

export function previewed(value: unknown): unknown {
  if (value === undefined || value === null) return null;
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= PREVIEW_CHARS
    ? value
    : ({ truncated: true, length: text.length, preview: text.slice(0, PREVIEW_CHARS) } as Preview);
}

/** `?limit=` (1..max) and `?after=` (an operation seq) of the timeline. */
function timelineQuery(query: unknown): { limit: number; after: number } {
  const q = objectBody(query, ['limit', 'after'], 'query string');
  const int = (v: unknown, name: string, min: number, max: number, dflt: number) => {
    if (v === undefined) return dflt;
    if (typeof v !== 'string' || !/^\d{1,10}$/.test(v) || Number(v) < min || Number(v) > max) {
      throw new InvalidArgumentError(name, `must be an integer from ${min} to ${max}`);
    }
    return Number(v);
  };
  // Sequence numbers start at 0: no `after` is -1, every operation.
  return { limit: int(q.limit, 'limit', 1, 1000, 500), after: int(q.after, 'after', 0, 2 ** 31 - 1, -1) };
}

/** One workflow's timeline. Routed under `<prefix>/workflows` (see controllers.ts). */
@UseFilters(WeftExceptionFilter)
export class WeftTimelineController {
  private readonly stacks: boolean;

  constructor(
    private readonly engine: WeftEngine,
    @Inject(WEFT_MODULE_EXTRAS) extras: WeftModuleExtras,
  ) {
    this.stacks = exposeErrorStacks(extras.http);
  }

  /** A recorded value as sent: recorded errors in it lose their stacks unless exposed, then long ones are cut. */
  private recorded(value: unknown): unknown {
    return previewed(this.stacks ? value : withoutStacks(value));
  }

  /** Operations from `?after=` (a seq, exclusive), at most `?limit=` (default 500). */
  @Get(':id/timeline')
  async timeline(@Param('id') id: string, @Query() query: unknown) {
    validateWorkflowId(id);
    const { limit, after } = timelineQuery(query);
    const { store } = this.engine;
    // The row first: an ended row's history read after it is complete (as in describe).
    const row = await store.workflows.get(id);
    if (!row) throw new WorkflowNotFoundError(id);
    const [ops, messages, messagesTotal, children, childrenTotal, claim, events, eventsTotal, streams] = await Promise.all([
      store.operations.find({ where: { workflowId: id, seq: MoreThan(after) }, order: { seq: 'ASC' }, take: limit + 1 }),
      store.messages.find({ where: { workflowId: id }, order: { id: 'DESC' }, take: MESSAGES_SHOWN }),
      store.messages.countBy({ workflowId: id }),
      store.workflows.find({
        select: { id: true, type: true, status: true, createdAt: true },
        where: { parentId: id },
        order: { createdAt: 'ASC', id: 'ASC' },
        take: CHILDREN_SHOWN,
      }),
      store.workflows.countBy({ parentId: id }),
      this.engine.ownership.describe(id),
      store.events.find({ where: { workflowId: id }, order: { key: 'ASC' }, take: EVENTS_SHOWN }),
      store.events.countBy({ workflowId: id }),
      store.streams.list(id, STREAMS_SHOWN),
    ]);
    return {
      serverTime: new Date(),
      workflowId: row.id,
      type: row.type,
      status: row.status,
      runNumber: row.runNumber,
      version: row.version,
      workflowVersion: row.workflowVersion,
      parentId: row.parentId,
      createdAt: row.createdAt,
      updatedAt: row.updatedAt,
      completedAt: row.completedAt,
      deadline: row.deadline,
      startAt: row.startAt,
      input: this.recorded(row.input),
      output: this.recorded(row.output),
      error: this.recorded(row.error),
      attributes: row.attributes ?? {},
      forkedFrom: row.forkedFrom ?? null,
      retriedFrom: row.retriedFrom ?? null,
      operations: ops.slice(0, limit).map((o) => ({
        seq: o.seq,
        kind: o.kind,
        name: o.name,
        status: o.status,
        attempts: o.attempts,
        startedAt: o.startedAt,
        completedAt: o.completedAt,
        durationMs: o.startedAt && o.completedAt ? o.completedAt.getTime() - o.startedAt.getTime() : null,
        result: this.recorded(o.result),
        error: this.recorded(o.error),
        event: o.event,
      })),
      moreOperations: ops.length > limit,
      // Newest first: the pending ones an operator looks for are the latest.
      messages: messages.map((m) => ({
        id: m.id,
        kind: m.kind,
        name: m.name,
        status: m.status,
        consumedSeq: m.consumedSeq,
        createdAt: m.createdAt,
        payload: this.recorded(m.payload),
      })),
      messagesTotal,
      children: children.map((c) => ({ workflowId: c.id, type: c.type, status: c.status as WorkflowStatus, createdAt: c.createdAt })),
      childrenTotal,
      claim,
      // ctx.setEvent: each key's latest value, by key.
      events: events.map((e) => ({ key: e.key, value: this.recorded(e.value), updatedAt: e.updatedAt })),
      eventsTotal,
      // ctx.writeStream: each stream's key, entry count and close, by key (the page tails one over SSE).
      streams: streams.streams,
      streamsTotal: streams.total,
    };
  }
}

export interface EngineView extends Partial<EngineClaims> {
  engineId: string;
  /** The engine answering this request. */
  self: boolean;
}

/**
 * The declared queues: limits, enqueued and running (as of the last admission pass); a queue's
 * partition keys with work (read from weft_workflows). Routed at `<prefix>/queues`.
 */
@UseFilters(WeftExceptionFilter)
export class WeftQueuesController {
  constructor(private readonly engine: WeftEngine) {}

  @Get()
  queues(@Query() query: unknown) {
    objectBody(query, [], 'query string');
    return { serverTime: new Date(), queues: this.engine.queueViews() };
  }

  /** One queue's partition keys with work, busiest first: `?limit=` 1 to 100 (default 20). */
  @Get(':name/partitions')
  async partitions(@Param('name') name: string, @Query() query: unknown) {
    const q = objectBody(query, ['limit'], 'query string');
    if (q.limit !== undefined && (typeof q.limit !== 'string' || !/^\d{1,10}$/.test(q.limit))) {
      throw new InvalidArgumentError('limit', `must be an integer from 1 to ${MAX_PARTITIONS_SHOWN}`);
    }
    const limit = q.limit === undefined ? undefined : Number(q.limit);
    return { serverTime: new Date(), ...(await this.engine.queuePartitions(name, { limit })) };
  }
}

/** The engines: this one's figures, the claim holders (workflow-lease), the lease (lease). Routed at `<prefix>/engines`. */
@UseFilters(WeftExceptionFilter)
export class WeftEnginesController {
  private readonly claims: ClaimRepository;
  private readonly lease: LeaseRepository;

  constructor(private readonly engine: WeftEngine) {
    // Ownership repositories are built by their users (docs/architecture.md); reads only.
    this.claims = new ClaimRepository(engine.database.sql, engine.database.schema);
    this.lease = new LeaseRepository(engine.database.sql, engine.database.schema);
  }

  @Get()
  async engines(@Query() query: unknown) {
    objectBody(query, [], 'query string');
    const health: EngineHealthSnapshot = this.engine.healthSnapshot();
    const mode = health.ownership;
    const { ttlMs } = this.engine.ownership.config;
    const [holders, lease] = await Promise.all([
      mode === 'workflow-lease' ? this.claims.engines(ttlMs, ENGINES_SHOWN) : Promise.resolve([]),
      mode === 'lease' ? this.lease.findOneBy({ id: 1 }) : Promise.resolve(null),
    ]);
    const engines: EngineView[] = holders.map((h) => ({ ...h, self: h.engineId === health.engineId }));
    if (!engines.some((e) => e.self)) engines.unshift({ engineId: health.engineId, self: true, claims: health.claimsHeld });
    return {
      serverTime: new Date(),
      mode,
      claimTtlMs: mode === 'none' ? null : ttlMs,
      self: {
        engineId: health.engineId,
        bootstrapped: health.bootstrapped,
        halted: health.halted,
        backgroundTasks: health.backgroundTasks,
        lastBackgroundPassAt: health.lastBackgroundPassAt,
        backgroundIntervalMs: health.backgroundIntervalMs,
        liveWorkflows: health.liveWorkflows,
        claimsHeld: health.claimsHeld,
        renewalFailures: health.renewalFailures,
      },
      engines,
      lease: lease ? { holder: lease.holder, epoch: lease.epoch, expiresAt: lease.expiresAt } : null,
    };
  }
}
