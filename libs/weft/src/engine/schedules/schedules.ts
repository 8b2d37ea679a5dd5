// engine.schedules: the schedule API and the maintenance pass that fires due schedules
// (docs/schedules.md). Fire times are computed from the row and the database clock; each fire's
// workflow id is `${scheduleId}@${fireTimeISO}`, so however many engines pass over a schedule,
// and however often a pass is cut short by a crash, each fire time starts at most one workflow.
import { InvalidArgumentError, ScheduleAlreadyExistsError, ScheduleNotFoundError, WorkflowNotRunningError } from '../../common/errors.js';
import type {
  ScheduleCreateOptions,
  ScheduleDescription,
  ScheduleFireOutcome,
  ScheduleOverlapPolicy,
  ScheduleSpec,
  WorkflowStatus,
} from '../../common/types.js';
import type {
  ScheduleDefinition,
  ScheduleRecentRun,
  ScheduleRepository,
  ScheduleRow,
} from '../../storage/repositories/schedule.repository.js';
import type { WorkflowRepository } from '../../storage/repositories/workflow.repository.js';
import type { Queryable, SqlClient } from '../../storage/sql-client.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import type { Starter } from '../starter.js';
import { isTerminal } from '../transitions.js';
import { newRow } from '../new-row.js';
import { toStoredJson } from '../validation.js';
import { dueFires, FireRule, fireTimesAfter, fireWorkflowId, intervalAround, resolveSchedule, validateScheduleId } from './spec.js';

const DUE_BATCH = 50;
/** Fires started in one pass for one schedule after an outage; older due fires count as missed. */
const MAX_CATCHUP_FIRES = 100;
const RECENT_RUNS = 10;
const NEXT_FIRE_TIMES = 5;
const LIST_MAX = 1000;
/** A rule that never fires again (a cron naming a past year) parks the schedule this far out. */
const NEVER_MS = 100 * 365 * 86_400_000;

export interface ScheduleDependencies {
  repo: ScheduleRepository;
  workflows: WorkflowRepository;
  sql: SqlClient;
  starter: Starter;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  /** Cancels a running workflow (overlap 'cancel-other'). */
  cancel(workflowId: string, reason: string): Promise<void>;
  /** Rejects when this engine may not run anything (not bootstrapped, disposed, deposed). */
  assertCanRun(): Promise<void>;
  /** Throws EngineDisposedError once the engine is disposed (the reads need no more than that). */
  assertOpen(): void;
  /** Whether this engine's maintenance may fire schedules now (under 'lease': the holder only). */
  mayFire(): boolean;
}

export type SchedulePatch = Partial<ScheduleSpec & { workflowType: string }>;

export class WeftSchedules {
  private readonly declared = new Map<string, ScheduleCreateOptions>();
  private readonly reader: ScheduleReader;

  /** @internal Built by the engine: use engine.schedules. */
  constructor(private readonly deps: ScheduleDependencies) {
    this.reader = new ScheduleReader(deps.repo, deps.workflows);
  }

  /** @internal A `@Schedule` of a registered workflow: written at bootstrap by `syncDeclared`. */
  declare(o: ScheduleCreateOptions): void {
    const d = this.definition(o); // validates the rule and the input now, at registration
    const other = this.declared.get(d.id);
    if (other && other.workflowType !== d.workflowType) {
      throw new InvalidArgumentError('schedule id', `"${d.id}" is declared by both "${other.workflowType}" and "${d.workflowType}"`);
    }
    this.declared.set(d.id, o);
  }

  /** @internal Creates or updates every declared schedule; concurrent replicas converge on one row each. */
  async syncDeclared(): Promise<void> {
    if (this.declared.size === 0) return;
    const now = await this.deps.repo.now();
    for (const o of this.declared.values()) await this.deps.repo.ensure(this.definition(o, now));
  }

  /** Creates a schedule; ScheduleAlreadyExistsError if the id is taken. */
  async create(o: ScheduleCreateOptions): Promise<ScheduleDescription> {
    await this.deps.assertCanRun();
    const def = this.definition(o, await this.deps.repo.now());
    if (o.paused !== undefined && typeof o.paused !== 'boolean') throw new InvalidArgumentError('schedule paused', 'must be a boolean');
    if (!(await this.deps.repo.add(def, o.paused ?? false))) throw new ScheduleAlreadyExistsError(def.id);
    return this.describe(def.id);
  }

  /** Changes a schedule's definition; a new rule takes effect from now (no catch-up of the old one). */
  async update(id: string, patch: SchedulePatch): Promise<ScheduleDescription> {
    if (typeof patch !== 'object' || patch === null) throw new InvalidArgumentError('schedule patch', 'must be an object');
    return this.change(id, (row, now) => {
      const current = specOf(row);
      // A patch naming one rule replaces the other: { every } on a cron schedule makes it an interval one.
      const rule =
        patch.cron !== undefined || patch.every !== undefined
          ? { cron: patch.cron, every: patch.every, timezone: patch.timezone }
          : { cron: current.cron, every: current.every, timezone: patch.timezone ?? current.timezone };
      const merged: ScheduleCreateOptions = {
        ...rule,
        id: row.id,
        workflowType: patch.workflowType ?? row.workflowType,
        input: 'input' in patch ? patch.input : row.input,
        overlap: patch.overlap ?? current.overlap,
        catchupWindow: patch.catchupWindow ?? current.catchupWindow,
      };
      const def = this.definition(merged, now);
      const ruleChanged = def.cron !== row.cron || def.everyMs !== row.everyMs || def.timezone !== row.timezone;
      return { ...def, nextFireAt: ruleChanged ? def.nextFireAt : row.nextFireAt, paused: row.paused, bufferedFireAt: row.bufferedFireAt };
    });
  }

  /** Stops firing; a run in progress goes on. */
  async pause(id: string): Promise<ScheduleDescription> {
    return this.change(id, (row) => ({ ...row, paused: true, bufferedFireAt: null }));
  }

  /** Fires again from the next fire time after now: what fell due while paused is not caught up. */
  async unpause(id: string): Promise<ScheduleDescription> {
    return this.change(id, (row, now) => ({
      ...row,
      nextFireAt: nextAfter(ruleOf(row), now),
      paused: false,
      bufferedFireAt: null,
    }));
  }

  /** Starts one extra run now, whatever the overlap policy; resolves with its workflow id. */
  async trigger(id: string): Promise<{ workflowId: string }> {
    validateScheduleId(id);
    await this.deps.assertCanRun();
    return this.deps.sql.transaction(async (_client, via) => {
      const locked = await this.deps.repo.lockOne(via, id);
      if (!locked) throw new ScheduleNotFoundError(id);
      const { row, dbNow } = locked;
      const workflowId = await this.startFire(row, dbNow);
      const run: ScheduleRecentRun = { fireAt: dbNow.toISOString(), workflowId, outcome: 'triggered' };
      await this.deps.repo.recordFires(via, id, {
        nextFireAt: row.nextFireAt,
        bufferedFireAt: row.bufferedFireAt,
        lastWorkflowId: workflowId,
        recentRuns: [run, ...row.recentRuns].slice(0, RECENT_RUNS),
      });
      this.deps.options.metrics.scheduleFires?.('triggered', 1);
      return { workflowId };
    });
  }

  /** Deletes the schedule; runs it started go on. ScheduleNotFoundError if there is none. */
  async delete(id: string): Promise<void> {
    validateScheduleId(id);
    await this.deps.assertCanRun();
    if (!(await this.deps.repo.drop(id))) throw new ScheduleNotFoundError(id);
  }

  async describe(id: string): Promise<ScheduleDescription> {
    this.deps.assertOpen();
    return this.reader.describe(id);
  }

  /** Schedules ordered by id, `limit` (default 100, at most 1000) after the id `after`. */
  async list(opts: { after?: string; limit?: number } = {}): Promise<ScheduleDescription[]> {
    this.deps.assertOpen();
    return this.reader.list(opts);
  }

  /** @internal One maintenance pass: fires the due schedules of the types this engine runs. */
  async fireDue(): Promise<number> {
    if (!this.deps.mayFire()) return 0;
    const types = this.deps.registry.names();
    if (types.length === 0 || !(await this.deps.repo.anyDue(types))) return 0;
    let fired = 0;
    await this.deps.sql.transaction(async (_client, via) => {
      for (const { row, dbNow } of await this.deps.repo.lockDue(via, types, DUE_BATCH)) {
        // One schedule's failure (its start refused, say) must not hold back the others.
        fired += await this.fireOne(via, row, dbNow).catch((err: Error) => {
          this.deps.options.logger.warn(`Schedule "${row.id}" could not fire: ${err.message}`);
          return 0;
        });
      }
    });
    return fired;
  }

  private async fireOne(via: Queryable, row: ScheduleRow, dbNow: Date): Promise<number> {
    const rule = ruleOf(row);
    const pass = new FirePass(row, this.deps.workflows, (fireAt) => this.startFire(row, fireAt));
    if (pass.buffered && !(await pass.lastRunning())) await pass.startBuffered();
    let nextFireAt = row.nextFireAt;
    if (row.nextFireAt <= dbNow) {
      const windowMs = row.catchupWindowMs ?? intervalAround(rule, row.nextFireAt);
      const { due, missed, lastMissed } = dueFires(rule, row.nextFireAt, dbNow, windowMs, MAX_CATCHUP_FIRES);
      if (lastMissed) pass.note(lastMissed, 'missed', missed);
      for (const [i, fireAt] of due.entries()) await this.fireAt(pass, fireAt, i === due.length - 1 ? 'started' : 'caught-up');
      nextFireAt = nextAfter(rule, dbNow);
    }
    await this.deps.repo.recordFires(via, row.id, {
      nextFireAt,
      bufferedFireAt: pass.buffered,
      lastWorkflowId: pass.last,
      recentRuns: [...pass.runs, ...row.recentRuns].slice(0, RECENT_RUNS),
    });
    for (const [outcome, n] of pass.counts) this.deps.options.metrics.scheduleFires?.(outcome, n);
    return (pass.counts.get('started') ?? 0) + (pass.counts.get('caught-up') ?? 0);
  }

  /** One due fire time, by the overlap policy when the previous run still runs. */
  private async fireAt(pass: FirePass, fireAt: Date, outcome: 'started' | 'caught-up'): Promise<void> {
    const policy = pass.row.overlap as ScheduleOverlapPolicy;
    if (policy === 'allow-all' || !(await pass.lastRunning())) return pass.start(fireAt, outcome);
    if (policy === 'skip') return pass.note(fireAt, 'skipped');
    if (policy === 'buffer-one') {
      pass.buffered = fireAt;
      return pass.note(fireAt, 'buffered');
    }
    await this.deps.cancel(pass.last!, `Cancelled by schedule "${pass.row.id}" (overlap 'cancel-other')`).catch((err: unknown) => {
      if (!(err instanceof WorkflowNotRunningError)) throw err;
    });
    await pass.start(fireAt, outcome);
  }

  private async startFire(row: ScheduleRow, fireAt: Date): Promise<string> {
    const workflowId = fireWorkflowId(row.id, fireAt);
    // return-existing: a pass repeated after a crash finds the run the first one started.
    const opts = { workflowId, idPolicy: 'return-existing' } as const;
    if (this.deps.registry.has(row.workflowType)) return this.deps.starter.start({ type: row.workflowType, input: row.input, opts });
    // Only a trigger gets here (fireDue takes the types this engine runs): on an engine that does
    // not run the type (the weft CLI's, an API-only service) the run is stored as a start due
    // now, and the timer pass of an engine that runs the type launches it. An existing id is kept.
    const start = newRow(row.workflowType, row.input, { ...opts, startAfter: 1 }, this.deps.options.maxPayloadBytes);
    await this.deps.workflows.startMany([start]);
    return workflowId;
  }

  /** Read, change, compare-and-swap; a fire pass holding the row makes the swap fail, so read again. */
  private async change(
    id: string,
    next: (row: ScheduleRow, now: Date) => ScheduleDefinition & { paused: boolean; bufferedFireAt: Date | null },
  ): Promise<ScheduleDescription> {
    validateScheduleId(id);
    await this.deps.assertCanRun();
    for (let attempt = 0; ; attempt++) {
      const row = await this.deps.repo.get(id);
      if (!row) throw new ScheduleNotFoundError(id);
      if (await this.deps.repo.change(next(row, await this.deps.repo.now()), row.version)) return this.describe(id);
      if (attempt >= 10) throw new Error(`Schedule "${id}" kept changing under this update; try again`);
    }
  }

  private definition(o: ScheduleCreateOptions, now = new Date()): ScheduleDefinition {
    const r = resolveSchedule(o);
    const input = toStoredJson(o.input ?? null, `Input of schedule "${r.id}"`, this.deps.options.maxPayloadBytes);
    return { ...r, input, nextFireAt: nextAfter(r, now) };
  }
}

/** The read side of engine.schedules: needs only the tables, so the weft CLI reads with it without an engine. */
export class ScheduleReader {
  constructor(
    private readonly repo: ScheduleRepository,
    private readonly workflows: WorkflowRepository,
  ) {}

  async describe(id: string): Promise<ScheduleDescription> {
    validateScheduleId(id);
    const row = await this.repo.get(id);
    if (!row) throw new ScheduleNotFoundError(id);
    const statuses = await this.workflows.statuses(row.recentRuns.map((r) => r.workflowId));
    return describeRow(row, statuses, await this.repo.now());
  }

  /** Schedules ordered by id, `limit` (default 100, at most 1000) after the id `after`. */
  async list(opts: { after?: string; limit?: number } = {}): Promise<ScheduleDescription[]> {
    const limit = opts.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > LIST_MAX)
      throw new InvalidArgumentError('limit', `must be an integer from 1 to ${LIST_MAX}`);
    if (opts.after !== undefined) validateScheduleId(opts.after);
    const rows = await this.repo.listPage(opts.after ?? '', limit);
    const statuses = await this.workflows.statuses(rows.flatMap((r) => r.recentRuns.map((x) => x.workflowId)));
    const now = await this.repo.now();
    return rows.map((row) => describeRow(row, statuses, now));
  }
}

/** What one pass over one schedule did: its runs (newest first), counts by outcome, the last run and the buffer. */
class FirePass {
  readonly runs: ScheduleRecentRun[] = [];
  readonly counts = new Map<ScheduleFireOutcome, number>();
  last: string | null;
  buffered: Date | null;

  constructor(
    readonly row: ScheduleRow,
    private readonly workflows: WorkflowRepository,
    private readonly startFire: (fireAt: Date) => Promise<string>,
  ) {
    this.last = row.lastWorkflowId;
    this.buffered = row.bufferedFireAt;
  }

  note(fireAt: Date, outcome: ScheduleFireOutcome, count = 1, workflowId = fireWorkflowId(this.row.id, fireAt)): void {
    this.runs.unshift({ fireAt: fireAt.toISOString(), workflowId, outcome });
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + count);
  }

  async start(fireAt: Date, outcome: ScheduleFireOutcome): Promise<void> {
    this.last = await this.startFire(fireAt);
    this.note(fireAt, outcome, 1, this.last);
  }

  async startBuffered(): Promise<void> {
    const fireAt = this.buffered!;
    this.buffered = null;
    await this.start(fireAt, 'started');
  }

  async lastRunning(): Promise<boolean> {
    if (!this.last) return false;
    const status = (await this.workflows.statuses([this.last])).get(this.last);
    return status !== undefined && !isTerminal(status);
  }
}

function nextAfter(rule: FireRule, at: Date): Date {
  return fireTimesAfter(rule, at, 1)[0] ?? new Date(at.getTime() + NEVER_MS);
}

function ruleOf(row: ScheduleRow): FireRule {
  return { cron: row.cron, everyMs: row.everyMs, timezone: row.timezone };
}

function specOf(row: ScheduleRow): ScheduleSpec {
  return {
    ...(row.cron !== null ? { cron: row.cron, ...(row.timezone ? { timezone: row.timezone } : {}) } : { every: row.everyMs! }),
    overlap: row.overlap as ScheduleOverlapPolicy,
    ...(row.catchupWindowMs !== null ? { catchupWindow: row.catchupWindowMs } : {}),
  };
}

function describeRow(row: ScheduleRow, statuses: Map<string, WorkflowStatus>, now: Date): ScheduleDescription {
  const rule = ruleOf(row);
  const from = row.nextFireAt > now ? new Date(row.nextFireAt.getTime() - 1) : now;
  return {
    id: row.id,
    workflowType: row.workflowType,
    cron: row.cron,
    everyMs: row.everyMs,
    timezone: row.timezone,
    input: row.input,
    overlap: row.overlap as ScheduleOverlapPolicy,
    catchupWindowMs: row.catchupWindowMs ?? intervalAround(rule, now),
    paused: row.paused,
    source: row.source,
    nextFireTimes: row.paused ? [] : fireTimesAfter(rule, from, NEXT_FIRE_TIMES),
    bufferedFireAt: row.bufferedFireAt,
    recentRuns: row.recentRuns.map((r) => ({
      fireAt: new Date(r.fireAt),
      workflowId: r.workflowId,
      outcome: r.outcome as ScheduleFireOutcome,
      status: r.outcome === 'skipped' || r.outcome === 'missed' || r.outcome === 'buffered' ? null : (statuses.get(r.workflowId) ?? null),
    })),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
