import { randomUUID } from 'node:crypto';
import {
  EngineDisposedError,
  InvalidArgumentError,
  ResultTimeoutError,
  WorkflowAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
} from '../errors';
import { TERMINAL_STATUSES, WorkflowStatus } from '../storage/entities';
import { openDatabase, OpenedDatabase } from '../storage/data-source';
import type { TimerRow, WorkflowRow } from '../storage/types';
import { InsertWorkflow, WorkflowStore } from '../storage/workflow-store';
import { Duration, parseDuration, parseOptionalDuration } from './duration';
import { GroupCommitter } from './group-committer';
import { WorkflowHandle } from './handle';
import { Change } from './execution';
import { ResolvedEngineOptions, resolveEngineOptions, WeftEngineOptions } from './options';
import { WorkflowClass, WorkflowRegistry } from './registry';
import { Runtime, Settled } from './runtime';
import { TimerLoop } from './timer-loop';
import type { ListFilter, ListPage, StartOptions, WorkflowDefinition, WorkflowDescription, WorkflowFailure } from './types';
import { toStoredJson, validateWorkflowId } from './validation';

const ID_POLICIES = ['return-existing', 'reject-duplicate', 'start-new-if-terminal'];
const TIMER_BATCH = 200;
const TIMER_RETRY_MS = 30_000;

const isTerminal = (s: WorkflowStatus) => TERMINAL_STATUSES.includes(s);

export interface EngineHealthSnapshot {
  engineId: string;
  ownership: 'none' | 'lease' | 'workflow-lease';
  bootstrapped: boolean;
  disposed: boolean;
  backgroundTasks: 'auto' | 'manual';
  /** Start of the last background pass (renewal pass under ownership, timer tick under 'none'). */
  lastBackgroundPassAt: Date | null;
  backgroundIntervalMs: number;
  liveWorkflows: number;
  claimsHeld: number;
  renewalFailures: number;
}

/** The durable workflow engine. Plain class: no Nest dependency. */
export class WeftEngine {
  readonly engineId: string;
  readonly store: WorkflowStore;
  readonly registry = new WorkflowRegistry();
  readonly options: ResolvedEngineOptions;
  private readonly runtime: Runtime;
  private readonly timers: TimerLoop;
  private disposed: Promise<void> | undefined;
  private started = false;
  private lastPassAt: Date | null = null;

  constructor(
    readonly database: OpenedDatabase,
    options: WeftEngineOptions = {},
    private readonly ownsDatabase = false,
  ) {
    this.engineId = options.engineId ?? randomUUID();
    this.options = resolveEngineOptions(options, this.engineId);
    this.store = new WorkflowStore(database.sql, database.schema);
    this.runtime = new Runtime(this.store, new GroupCommitter(this.store), this.registry, this.options);
    this.timers = new TimerLoop(
      async () => void (await this.processDueTimers()),
      this.options.timerPollMs,
      (err) => this.options.logger.warn(`Timer poll failed: ${(err as Error).message}`),
    );
    this.runtime.onTimerScheduled = (_id, delayMs) => this.timers.nudgeAt(Date.now() + delayMs);
  }

  /** Opens (and migrates) the configured database and builds an engine that closes it on dispose. */
  static async create(options: WeftEngineOptions = {}): Promise<WeftEngine> {
    const db = await openDatabase({ database: options.database, schema: options.schema, log: (l) => options.logger?.log(l) });
    return new WeftEngine(db, options, true);
  }

  /** Registers a workflow type: a class with run(ctx, input), or a definition with a factory. */
  register(nameOrDef: string | WorkflowDefinition, cls?: WorkflowClass): this {
    if (typeof nameOrDef === 'string') {
      if (typeof cls !== 'function') throw new InvalidArgumentError(`workflow "${nameOrDef}"`, 'needs a class');
      const Cls = cls as unknown as new () => InstanceType<WorkflowClass>;
      this.registry.register({ name: nameOrDef, factory: () => new Cls() });
    } else this.registry.register(nameOrDef);
    return this;
  }

  /** Recovers running workflows and starts the background loops (unless backgroundTasks is 'manual'). */
  async bootstrap(): Promise<void> {
    this.assertOpen();
    if (this.started) return;
    this.started = true;
    await this.recoverAll();
    if (this.options.backgroundTasks === 'auto') this.timers.start();
  }

  get commitStatements(): number {
    return this.runtime.committer.statements;
  }

  /** Starts a workflow; with idPolicy 'return-existing' (default) an existing id returns its handle. */
  async start<I>(type: string, input: I, opts: StartOptions = {}): Promise<WorkflowHandle> {
    this.assertOpen();
    const def = this.registry.get(type);
    const policy = opts.idPolicy ?? 'return-existing';
    if (!ID_POLICIES.includes(policy)) throw new InvalidArgumentError('idPolicy', `must be one of ${ID_POLICIES.join(', ')}`);
    const row = this.newRow(def.name, input, opts);
    const res = await this.store.insert(row);
    let version = res.version;
    let runNumber = 1;
    if (!res.inserted) {
      if (policy === 'reject-duplicate') throw new WorkflowAlreadyStartedError(row.id, res.status);
      if (policy === 'return-existing' || !isTerminal(res.status)) return this.handle(row.id);
      const restarted = await this.store.restart(row, res.version);
      if (restarted === null) return this.handle(row.id); // someone else restarted it first
      version = restarted;
      runNumber = (await this.store.get(row.id))?.runNumber ?? 1;
    }
    if (row.startInMs !== null) this.timers.nudgeAt(Date.now() + row.startInMs);
    else this.runtime.launchNew(def, row.id, row.input, version, runNumber);
    if (row.deadlineInMs !== null) this.timers.nudgeAt(Date.now() + row.deadlineInMs);
    return this.handle(row.id);
  }

  /** Validates everything about a start before anything is written. */
  private newRow(type: string, input: unknown, opts: StartOptions): InsertWorkflow {
    const id = opts.workflowId === undefined ? randomUUID() : validateWorkflowId(opts.workflowId);
    const parentId = opts.parentId === undefined ? null : validateWorkflowId(opts.parentId);
    const stored = toStoredJson(input, 'Workflow input', this.options.maxPayloadBytes);
    const startIn = this.startDelay(opts);
    const timeoutMs = parseOptionalDuration(opts.executionTimeout, 'executionTimeout');
    const delayed = startIn > 0;
    const timers: InsertWorkflow['timers'] = [];
    if (delayed) timers.push({ kind: 'delayed-start', delayMs: startIn });
    if (timeoutMs !== undefined) timers.push({ kind: 'execution-deadline', delayMs: startIn + timeoutMs });
    return {
      id,
      type,
      status: delayed ? 'pending' : 'running',
      input: stored,
      parentId,
      deadlineInMs: timeoutMs === undefined ? null : startIn + timeoutMs,
      startInMs: delayed ? startIn : null,
      timers,
    };
  }

  private startDelay(opts: StartOptions): number {
    if (opts.startAt !== undefined && opts.startAfter !== undefined) {
      throw new InvalidArgumentError('start options', 'give startAt or startAfter, not both');
    }
    if (opts.startAt !== undefined) {
      if (!(opts.startAt instanceof Date) || Number.isNaN(opts.startAt.getTime())) {
        throw new InvalidArgumentError('startAt', 'must be a valid Date');
      }
      return Math.max(0, opts.startAt.getTime() - Date.now());
    }
    return opts.startAfter === undefined ? 0 : parseDuration(opts.startAfter, 'startAfter');
  }

  handle(workflowId: string): WorkflowHandle {
    return new WorkflowHandle(this, workflowId);
  }

  /** Waits for the workflow to end; returns its output or throws WorkflowFailedError. */
  async result<O = unknown>(workflowId: string, opts: { timeout?: Duration } = {}): Promise<O> {
    validateWorkflowId(workflowId);
    const timeoutMs = opts.timeout === undefined ? Infinity : parseDuration(opts.timeout, 'result timeout');
    const deadline = Date.now() + timeoutMs;
    let pollMs = 20;
    const sub = this.runtime.subscribeSettled(workflowId);
    try {
      for (;;) {
        const row = await this.store.get(workflowId);
        if (!row) throw new WorkflowNotFoundError(workflowId);
        if (isTerminal(row.status)) return settledValue<O>(workflowId, row);
        const left = deadline - Date.now();
        if (left <= 0) throw new ResultTimeoutError(workflowId, timeoutMs);
        const s = await sub.wait(Math.min(pollMs, left));
        if (s) return settledValue<O>(workflowId, s);
        pollMs = Math.min(pollMs * 2, 500);
      }
    } finally {
      sub.cancel();
    }
  }

  async describe(workflowId: string): Promise<WorkflowDescription> {
    validateWorkflowId(workflowId);
    const [row, history] = await Promise.all([this.store.get(workflowId), this.store.history(workflowId)]);
    if (!row) throw new WorkflowNotFoundError(workflowId);
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
      history,
    };
  }

  async list(filter: ListFilter = {}): Promise<ListPage> {
    const limit = filter.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new InvalidArgumentError('limit', 'must be an integer from 1 to 1000');
    const statuses = filter.status === undefined ? undefined : Array.isArray(filter.status) ? filter.status : [filter.status];
    const after = filter.cursor ? decodeCursor(filter.cursor) : undefined;
    const rows = await this.store.list({ statuses, type: filter.type, after, limit: limit + 1 });
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      items: page.map((r) => ({
        workflowId: r.id,
        type: r.type,
        status: r.status,
        parentId: r.parentId,
        createdAt: r.createdAt,
        updatedAt: r.updatedAt,
        completedAt: r.completedAt,
      })),
      nextCursor: rows.length > limit && last ? encodeCursor(last) : null,
    };
  }

  /** Ends a workflow as cancelled; its ctx.signal aborts. Throws if it already ended. */
  async cancel(workflowId: string, reason = 'Cancelled'): Promise<void> {
    await this.external(workflowId, 'cancel', (row) => {
      if (isTerminal(row.status)) throw new WorkflowNotRunningError(workflowId, row.status);
      const error = { name: 'WorkflowCancelled', message: reason };
      return { status: 'cancelled', error: { value: error }, completed: true, clearTimers: true };
    });
  }

  /** Stops a running workflow without ending it; resume() continues it by replay. */
  async suspend(workflowId: string, reason = 'Suspended by an operator'): Promise<void> {
    await this.external(workflowId, 'suspend', (row) => {
      if (row.status !== 'running') throw new WorkflowNotRunningError(workflowId, row.status);
      return { status: 'suspended', error: { value: { name: 'WorkflowSuspended', message: reason } } };
    });
  }

  async resume(workflowId: string): Promise<void> {
    await this.external(workflowId, 'resume', (row) => {
      if (row.status !== 'suspended') throw new WorkflowNotRunningError(workflowId, row.status);
      return { status: 'running', error: { value: null } };
    });
    await this.runtime.drive(workflowId);
  }

  /** Replays and continues every running workflow of a registered type not already live here. */
  async recoverAll(): Promise<{ recovered: number }> {
    this.assertOpen();
    let after = '';
    let recovered = 0;
    for (;;) {
      const page = await this.store.runningPage(after, 500);
      if (page.length === 0) break;
      after = page[page.length - 1].id;
      const mine = page.filter((w) => this.registry.has(w.type) && !this.runtime.live.has(w.id));
      for (let i = 0; i < mine.length; i += 32) {
        await Promise.all(mine.slice(i, i + 32).map((w) => this.runtime.drive(w.id)));
      }
      recovered += mine.length;
    }
    return { recovered };
  }

  /** One round of background work, for backgroundTasks 'manual'. */
  async runMaintenance(): Promise<{ timersFired: number }> {
    this.assertOpen();
    const fired = await this.processDueTimers();
    return { timersFired: fired };
  }

  /** Stops loops, lets running steps finish for the grace period, then drops the rest (they re-run after restart). */
  dispose(): Promise<void> {
    this.disposed ??= (async () => {
      await this.timers.stop();
      const until = Date.now() + this.options.shutdownGraceMs;
      while (this.runtime.inflightSteps() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await this.runtime.close();
      if (this.ownsDatabase) await this.database.close();
    })();
    return this.disposed;
  }

  /** What health checks need; cheap, no I/O. */
  healthSnapshot(): EngineHealthSnapshot {
    return {
      engineId: this.engineId,
      ownership: 'none',
      bootstrapped: this.started,
      disposed: this.disposed !== undefined,
      backgroundTasks: this.options.backgroundTasks,
      lastBackgroundPassAt: this.lastPassAt,
      backgroundIntervalMs: this.options.timerPollMs,
      liveWorkflows: this.runtime.live.size,
      claimsHeld: 0,
      renewalFailures: 0,
    };
  }

  get isDisposed(): boolean {
    return this.disposed !== undefined;
  }

  private assertOpen(): void {
    if (this.disposed) throw new EngineDisposedError();
  }

  /** Due timers: one query per batch, then each wakes its workflow. */
  private async processDueTimers(): Promise<number> {
    this.lastPassAt = new Date();
    let total = 0;
    for (;;) {
      const due = await this.store.takeDueTimers(TIMER_BATCH, TIMER_RETRY_MS);
      total += due.length;
      await Promise.all(
        due.map((t) =>
          this.fire(t).catch((err) => this.options.logger.warn(`Timer ${t.kind} for "${t.workflowId}" failed: ${(err as Error).message}`)),
        ),
      );
      if (due.length < TIMER_BATCH) return total;
    }
  }

  private async fire(t: TimerRow): Promise<void> {
    switch (t.kind) {
      case 'sleep':
        return this.runtime.drive(t.workflowId, t.seq);
      case 'delayed-start':
        return this.fireDelayedStart(t.workflowId);
      case 'execution-deadline':
        await this.external(t.workflowId, 'timeout', (row) =>
          isTerminal(row.status)
            ? null
            : {
                status: 'timed_out',
                error: { value: { name: 'WorkflowTimedOut', message: 'Execution timeout reached' } },
                completed: true,
                clearTimers: true,
              },
        );
        return;
      default:
        return;
    }
  }

  private async fireDelayedStart(workflowId: string): Promise<void> {
    const row = await this.external(workflowId, 'delayed-start', (r) =>
      r.status === 'pending' ? { status: 'running', deleteTimers: [{ kind: 'delayed-start', seq: -1 }] } : null,
    );
    if (row) this.runtime.launchNew(this.registry.get(row.type), workflowId, row.input, row.version, row.runNumber);
  }

  /**
   * A transition committed from outside the workflow's own run (cancel, suspend, resume,
   * timeout, delayed start): read, decide, compare-and-swap, retried on a lost race.
   * Returns the row as committed, or null when `decide` chose to do nothing.
   */
  private async external(workflowId: string, what: string, decide: (row: WorkflowRow) => Change | null): Promise<WorkflowRow | null> {
    validateWorkflowId(workflowId);
    for (let attempt = 0; attempt < 20; attempt++) {
      const row = await this.store.get(workflowId);
      if (!row) throw new WorkflowNotFoundError(workflowId);
      const change = decide(row);
      if (!change) return null;
      const outcome = await this.runtime.commitCommand({ ...change, workflowId, expectedVersion: row.version });
      if (!outcome.ok) continue;
      const next = { ...row, ...(change.status && { status: change.status }), version: outcome.version };
      if (change.status && change.status !== 'running') this.runtime.stopLive(workflowId);
      if (change.status && isTerminal(change.status)) {
        this.runtime.settle(workflowId, { status: change.status, output: null, error: change.error?.value ?? null });
      }
      return next;
    }
    throw new Error(`Could not ${what} workflow "${workflowId}": it kept changing under us`);
  }
}

function settledValue<O>(workflowId: string, s: Settled | WorkflowRow): O {
  if (s.status === 'completed') return s.output as O;
  throw new WorkflowFailedError(workflowId, s.status, (s.error as WorkflowFailure | null) ?? null);
}

/** The cursor carries the database's own timestamp text: microseconds survive the round trip. */
function encodeCursor(r: { cursorAt: string; id: string }): string {
  return Buffer.from(JSON.stringify([r.cursorAt, r.id])).toString('base64url');
}

function decodeCursor(cursor: string): { at: string; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [string, string];
    if (typeof id !== 'string' || typeof at !== 'string' || Number.isNaN(Date.parse(at))) throw new Error('bad');
    return { at, id };
  } catch {
    throw new InvalidArgumentError('cursor', 'is not a cursor returned by list()');
  }
}
