// engine.schedules: the schedule API and the maintenance pass that fires due schedules
// (docs/schedules.md). Fire times are computed from the row and the database clock; each fire's
// workflow id is `${scheduleId}@${fireTimeISO}`, so however many engines pass over a schedule,
// and however often a pass is cut short by a crash, each fire time starts at most one workflow.
// No row lock is held while a fire starts: a start takes a pooled connection of its own, and a
// pool whose every connection waited on a lock for one more connection would stall.
import { InvalidArgumentError, ScheduleAlreadyExistsError, ScheduleNotFoundError, WorkflowNotRunningError } from '../../common/errors.js';
import type {
  ScheduleCreateOptions,
  ScheduleDescription,
  ScheduleFireOutcome,
  ScheduleOverlapPolicy,
  ScheduleSpec,
  WorkflowStatus,
} from '../../common/types.js';
import {
  MAX_PENDING_TRIGGERS,
  RECENT_RUNS,
  type ScheduleDefinition,
  type ScheduleRecentRun,
  type ScheduleRepository,
  type ScheduleRow,
} from '../../storage/repositories/schedule.repository.js';
import type { WorkflowRepository } from '../../storage/repositories/workflow.repository.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import type { Starter } from '../starter.js';
import { isTerminal } from '../transitions.js';
import { toStoredJson } from '../validation.js';
import {
  dueFires,
  FireRule,
  fireTimesAfter,
  fireWorkflowId,
  intervalAround,
  rejectUnknownKeys,
  resolveSchedule,
  SCHEDULE_DECORATOR_KEYS,
  SCHEDULE_PATCH_KEYS,
  validateScheduleId,
} from './spec.js';

const DUE_BATCH = 50;
/** Fires started in one pass for one schedule after an outage; older due fires count as missed. */
const MAX_CATCHUP_FIRES = 100;
const NEXT_FIRE_TIMES = 5;
/** Outcomes with no run of their own: their recent run shows no status. */
const NOT_STARTED = new Set(['skipped', 'missed', 'buffered', 'failed']);
/** A pass reaches a fire on time within one pass interval and this margin (the pass's own work). */
const ON_TIME_MARGIN_MS = 1000;
/** A schedule whose fire failed tries again at its first fire time this much later: logged once a minute at most. */
const FAILED_BACKOFF_MS = 60_000;
const LIST_MAX = 1000;
/** A rule that never fires again (a cron naming a past year) parks the schedule this far out. */
const NEVER_MS = 100 * 365 * 86_400_000;

export interface ScheduleDependencies {
  repo: ScheduleRepository;
  workflows: WorkflowRepository;
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
  /** The fire pass in progress: passes run one at a time (the timer loop's and the testing kit's). */
  private passing: Promise<number> | undefined;

  /** @internal Built by the engine: use engine.schedules. */
  constructor(private readonly deps: ScheduleDependencies) {
    this.reader = new ScheduleReader(deps.repo, deps.workflows);
  }

  /** @internal A `@Schedule` of a registered workflow: written at bootstrap by `syncDeclared`. */
  declare(o: ScheduleCreateOptions): void {
    rejectUnknownKeys('schedule options', o, [...SCHEDULE_DECORATOR_KEYS, 'workflowType']);
    const d = this.definition(o); // validates the rule and the input now, at registration
    const other = this.declared.get(d.id);
    if (other && other.workflowType !== d.workflowType) {
      throw new InvalidArgumentError('schedule id', `"${d.id}" is declared by both "${other.workflowType}" and "${d.workflowType}"`);
    }
    this.declared.set(d.id, o);
  }

  /**
   * @internal Creates or updates every declared schedule (concurrent replicas converge on one row
   * each), and pauses the declared schedules of the types this engine runs that its code no longer
   * declares: removing a `@Schedule` stops it. Schedules created through the API are left alone.
   */
  async syncDeclared(): Promise<void> {
    const types = this.deps.registry.names();
    if (this.declared.size === 0 && types.length === 0) return;
    const now = await this.deps.repo.now();
    for (const o of this.declared.values()) await this.deps.repo.ensure(this.definition(o, now));
    for (const s of await this.deps.repo.pauseUndeclared(types, [...this.declared.keys()])) {
      this.deps.options.logger.warn(
        `Schedule ${JSON.stringify(s.id)} of "${s.workflowType}" is no longer declared by a @Schedule: paused. ` +
          'Delete it with engine.schedules.delete, or unpause it to keep it (docs/schedules.md)',
      );
    }
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
    rejectUnknownKeys('schedule patch', patch, SCHEDULE_PATCH_KEYS);
    return this.change(id, (row, now) => {
      const current = specOf(row);
      // A patch naming one rule replaces the other: { every } on a cron schedule makes it an interval
      // one. A new cron keeps the schedule's time zone unless the patch names one.
      const rule =
        patch.every !== undefined
          ? { cron: patch.cron, every: patch.every, timezone: patch.timezone }
          : patch.cron !== undefined
            ? { cron: patch.cron, timezone: patch.timezone ?? current.timezone }
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

  /**
   * Starts one extra run now, whatever the overlap policy; resolves with its workflow id. On an
   * engine that does not run the type, the fire time is left on the schedule and the next pass of
   * an engine that runs it starts the run, through the type's queue like any of its starts.
   */
  async trigger(id: string): Promise<{ workflowId: string }> {
    validateScheduleId(id);
    await this.deps.assertCanRun();
    const row = await this.deps.repo.get(id);
    if (!row) throw new ScheduleNotFoundError(id);
    const fireAt = await this.deps.repo.now();
    const runsHere = this.deps.registry.has(row.workflowType);
    const workflowId = runsHere ? await this.startFire(row, fireAt) : fireWorkflowId(row.id, fireAt);
    const run: ScheduleRecentRun = { fireAt: fireAt.toISOString(), workflowId, outcome: 'triggered' };
    if (!(await this.deps.repo.recordTrigger(id, run, !runsHere))) {
      if (runsHere || !(await this.deps.repo.get(id))) throw new ScheduleNotFoundError(id);
      throw new InvalidArgumentError(
        'schedule trigger',
        `schedule "${id}" already has ${MAX_PENDING_TRIGGERS} triggers waiting for an engine that runs "${row.workflowType}"; start one`,
      );
    }
    this.deps.options.metrics.scheduleFires?.('triggered', 1);
    return { workflowId };
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

  /**
   * @internal One maintenance pass: fires the due schedules of the types this engine runs. A call
   * during another pass waits for it, then makes its own: two passes at once read the same due rows
   * and a failing schedule was tried, and logged, by both.
   */
  async fireDue(): Promise<number> {
    while (this.passing) await this.passing.catch(() => 0);
    const pass = this.firePass();
    this.passing = pass;
    try {
      return await pass;
    } finally {
      if (this.passing === pass) this.passing = undefined;
    }
  }

  private async firePass(): Promise<number> {
    if (!this.deps.mayFire()) return 0;
    const types = this.deps.registry.names();
    if (types.length === 0 || !(await this.deps.repo.anyDue(types))) return 0;
    let fired = 0;
    for (const { row, dbNow } of await this.deps.repo.dueRows(types, DUE_BATCH)) fired += await this.fireOne(row, dbNow);
    return fired;
  }

  /**
   * One schedule's pass, recorded if no other pass or change got there first (then that one's
   * record stands; the fires both started are the same workflows). A failure is this schedule's
   * alone: logged once, its next fire time moved on, so it neither blocks nor floods the others.
   */
  private async fireOne(row: ScheduleRow, dbNow: Date): Promise<number> {
    const pass = new FirePass(row, this.deps.workflows, (fireAt) => this.startFire(row, fireAt));
    let nextFireAt = row.nextFireAt;
    try {
      for (const at of row.pendingTriggers) await pass.startTriggered(new Date(at));
      if (!row.paused) nextFireAt = await this.fireRule(pass, row, dbNow);
    } catch (err) {
      this.deps.options.logger.warn(
        `Schedule ${JSON.stringify(row.id)} could not fire (${escaped((err as Error).message)}); it tries again in a minute or later`,
      );
      pass.failed(dbNow);
      nextFireAt = row.paused ? row.nextFireAt : backedOff(row, dbNow);
    }
    const recorded = await this.deps.repo.recordFires(row.id, row.version, {
      nextFireAt,
      bufferedFireAt: pass.buffered,
      lastWorkflowId: pass.last,
      recentRuns: [...pass.runs, ...row.recentRuns].slice(0, RECENT_RUNS),
    });
    if (!recorded) return 0;
    for (const [outcome, n] of pass.counts) this.deps.options.metrics.scheduleFires?.(outcome, n);
    return (pass.counts.get('started') ?? 0) + (pass.counts.get('caught-up') ?? 0);
  }

  /** The buffered fire and the due fire times of the rule; returns the next fire time. */
  private async fireRule(pass: FirePass, row: ScheduleRow, dbNow: Date): Promise<Date> {
    const rule = ruleOf(row);
    if (pass.buffered && !(await pass.lastRunning())) await pass.startBuffered();
    if (row.nextFireAt > dbNow) return row.nextFireAt;
    const windowMs = row.catchupWindowMs ?? intervalAround(rule, row.nextFireAt);
    const onTimeMs = this.deps.options.timerPollMs + ON_TIME_MARGIN_MS;
    const { due, missed, lastMissed } = dueFires(rule, row.nextFireAt, dbNow, { windowMs, onTimeMs }, MAX_CATCHUP_FIRES);
    if (lastMissed) pass.note(lastMissed, 'missed', missed);
    for (const [i, fireAt] of due.entries()) await this.fireAt(pass, fireAt, i === due.length - 1 ? 'started' : 'caught-up');
    return nextAfter(rule, dbNow);
  }

  /** One due fire time, by the overlap policy when the previous run still runs. */
  private async fireAt(pass: FirePass, fireAt: Date, outcome: 'started' | 'caught-up'): Promise<void> {
    const policy = pass.row.overlap as ScheduleOverlapPolicy;
    if (policy === 'allow-all' || !(await pass.lastRunning())) return pass.start(fireAt, outcome);
    if (policy === 'skip') return pass.note(fireAt, 'skipped');
    if (policy === 'buffer-one') return pass.buffer(fireAt);
    await this.deps.cancel(pass.last!, `Cancelled by schedule "${pass.row.id}" (overlap 'cancel-other')`).catch((err: unknown) => {
      if (!(err instanceof WorkflowNotRunningError)) throw err;
    });
    await pass.start(fireAt, outcome);
  }

  /** Starts one fire here (this engine runs the type: the caller checked), through the start path and its queue. */
  private async startFire(row: ScheduleRow, fireAt: Date): Promise<string> {
    // return-existing: a pass repeated after a crash, or another engine's, finds the run already started.
    const opts = { workflowId: fireWorkflowId(row.id, fireAt), idPolicy: 'return-existing' } as const;
    return this.deps.starter.start({ type: row.workflowType, input: row.input, opts });
  }

  /** Read, change, compare-and-swap; a fire pass recording meanwhile makes the swap fail, so read again. */
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

  private definition(o: ScheduleCreateOptions, now = new Date(this.deps.options.clock.now())): ScheduleDefinition {
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
  private _last: string | null;
  private _buffered: Date | null;

  constructor(
    readonly row: ScheduleRow,
    private readonly workflows: WorkflowRepository,
    private readonly startFire: (fireAt: Date) => Promise<string>,
  ) {
    this._last = row.lastWorkflowId;
    this._buffered = row.bufferedFireAt;
  }

  /** The workflow id of the schedule's last run. */
  get last(): string | null {
    return this._last;
  }

  /** The fire held back while the last run still runs (overlap 'buffer-one'). */
  get buffered(): Date | null {
    return this._buffered;
  }

  /** Holds this fire back until the last run ends (only the newest is kept). */
  buffer(fireAt: Date): void {
    this._buffered = fireAt;
    this.note(fireAt, 'buffered');
  }

  /** The pass failed: it is noted, and the buffered fire is dropped. */
  failed(at: Date): void {
    this.note(at, 'failed');
    this._buffered = null;
  }

  note(fireAt: Date, outcome: ScheduleFireOutcome, count = 1, workflowId = fireWorkflowId(this.row.id, fireAt)): void {
    this.runs.unshift({ fireAt: fireAt.toISOString(), workflowId, outcome });
    this.counts.set(outcome, (this.counts.get(outcome) ?? 0) + count);
  }

  async start(fireAt: Date, outcome: ScheduleFireOutcome): Promise<void> {
    this._last = await this.startFire(fireAt);
    this.note(fireAt, outcome, 1, this._last);
  }

  /** A trigger made on an engine that does not run the type: its run was recorded by the trigger. */
  async startTriggered(fireAt: Date): Promise<void> {
    this._last = await this.startFire(fireAt);
  }

  async startBuffered(): Promise<void> {
    const fireAt = this._buffered!;
    this._buffered = null;
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

/** After a failed fire: the first fire time a back-off from now, or the back-off when the rule itself cannot be computed. */
function backedOff(row: ScheduleRow, now: Date): Date {
  const after = new Date(now.getTime() + FAILED_BACKOFF_MS);
  try {
    return nextAfter(ruleOf(row), after);
  } catch {
    return after;
  }
}

/** A message for a log line: control characters (a stored id, a driver's text) shown escaped. */
function escaped(text: string): string {
  return JSON.stringify(text).slice(1, -1);
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
      status: NOT_STARTED.has(r.outcome) ? null : (statuses.get(r.workflowId) ?? null),
    })),
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
