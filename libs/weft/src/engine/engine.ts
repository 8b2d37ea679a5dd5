import { randomUUID } from 'node:crypto';
import {
  EngineDisposedError,
  EngineLeaseNotHeldError,
  InvalidArgumentError,
  ResultTimeoutError,
  WorkflowAlreadyStartedError,
  WorkflowNotFoundError,
} from '../errors';
import { resolveOwnership } from '../ownership/config';
import { Ownership } from '../ownership/ownership';
import type { PassReport } from '../ownership/renewal-scheduler';
import { openDatabase, OpenedDatabase } from '../storage/data-source';
import { InsertWorkflow, WorkflowStore } from '../storage/workflow-store';
import { Duration, parseDuration, parseOptionalDuration } from './duration';
import { GroupCommitter } from './group-committer';
import { WorkflowHandle } from './handle';
import { ResolvedEngineOptions, resolveEngineOptions, WeftEngineOptions } from './options';
import { WorkflowClass, WorkflowRegistry } from './registry';
import { decodeCursor, encodeCursor, settledValue } from './results';
import { Runtime } from './runtime';
import { TimerLoop } from './timer-loop';
import { isTerminal, Transitions } from './transitions';
import type { ListFilter, ListPage, StartOptions, WorkflowDefinition, WorkflowDescription, WorkflowFailure } from './types';
import { toStoredJson, validateWorkflowId } from './validation';

const ID_POLICIES = ['return-existing', 'reject-duplicate', 'start-new-if-terminal'];

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
  readonly ownership: Ownership;
  private readonly runtime: Runtime;
  private readonly timers: TimerLoop;
  private readonly transitions: Transitions;
  private disposed: Promise<{ released: number; failed: number }> | undefined;
  private started = false;
  private bootstrapping: Promise<void> | undefined;
  private lastPassAt: Date | null = null;

  constructor(
    readonly database: OpenedDatabase,
    options: WeftEngineOptions = {},
    private readonly ownsDatabase = false,
  ) {
    this.engineId = options.engineId ?? randomUUID();
    this.options = resolveEngineOptions(options, this.engineId);
    const ownership = resolveOwnership(options);
    this.store = new WorkflowStore(database.sql, database.schema);
    this.runtime = new Runtime(this.store, new GroupCommitter(this.store), this.registry, this.options);
    this.ownership = new Ownership(
      database.sql,
      database.schema,
      this.engineId,
      ownership,
      this.options.logger,
      options.metrics,
      options.onWarning,
    );
    this.wireOwnership();
    this.transitions = new Transitions(this.store, this.runtime, this.registry, this.ownership, this.options.logger);
    this.timers = new TimerLoop(
      async () => {
        this.lastPassAt = new Date();
        await this.transitions.processDueTimers();
      },
      this.options.timerPollMs,
      (err) => this.options.logger.warn(`Timer poll failed: ${(err as Error).message}`),
    );
    this.runtime.onTimerScheduled = (_id, delayMs) => this.timers.nudgeAt(Date.now() + delayMs);
  }

  private wireOwnership(): void {
    const o = this.ownership;
    this.runtime.hooks = {
      decorate: (c) => o.decorate(c),
      committed: (c, outcome) => o.committed(c, outcome),
      holds: (id) => o.holds(id),
      mayRun: (id) => o.mayRun(id),
      epochOf: (id) => o.registry?.epochOf(id) ?? o.lease?.fence()?.epoch,
      wakeCheck: (id, epoch, kind) => o.wakeCheck(id, epoch, kind),
    };
    o.attach({
      stopLive: (id) => this.runtime.stopLive(id),
      drive: (id) => this.runtime.drive(id),
      halt: () => this.runtime.halt(),
      registeredTypes: () => this.registry.names(),
      poll: async () => 0,
    });
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

  /**
   * Ownership bootstrap (gates, lease), then recovery of running workflows, then the
   * background loops (unless backgroundTasks is 'manual').
   */
  async bootstrap(): Promise<void> {
    this.assertOpen();
    if (this.bootstrapping) return this.bootstrapping;
    this.bootstrapping = (async () => {
      await this.ownership.bootstrap();
      await this.recoverAll();
      if (this.options.backgroundTasks === 'auto' && !this.disposed) {
        this.timers.start();
        this.ownership.scheduler?.start();
      }
      this.started = true;
    })();
    return this.bootstrapping;
  }

  get commitStatements(): number {
    return this.runtime.committer.statements;
  }

  /** Starts a workflow; with idPolicy 'return-existing' (default) an existing id returns its handle. */
  async start<I>(type: string, input: I, opts: StartOptions = {}): Promise<WorkflowHandle> {
    this.assertCanRun();
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
    this.options.metrics.workflowStarted?.(def.name);
    if (row.startInMs !== null) this.timers.nudgeAt(Date.now() + row.startInMs);
    else if (await this.claimNew(row.id)) this.runtime.launchNew(def, row.id, row.input, version, runNumber);
    if (row.deadlineInMs !== null) this.timers.nudgeAt(Date.now() + row.deadlineInMs);
    return this.handle(row.id);
  }

  /** Claimed before its code runs; if another engine got it first, that engine drives it. */
  private async claimNew(workflowId: string): Promise<boolean> {
    return this.ownership.registry ? this.ownership.registry.acquireNew(workflowId) : true;
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
    this.assertOpen();
    await this.transitions.cancel(workflowId, reason);
  }

  /** Stops a running workflow without ending it; resume() continues it by replay. */
  async suspend(workflowId: string, reason = 'Suspended by an operator'): Promise<void> {
    this.assertOpen();
    await this.transitions.suspend(workflowId, reason);
  }

  /** Continues a suspended workflow here; WorkflowClaimUnavailableError if another engine holds it. */
  async resume(workflowId: string): Promise<void> {
    this.assertOpen();
    await this.transitions.resume(workflowId);
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
        const batch = await Promise.all(
          mine.slice(i, i + 32).map(async (w) => {
            // Background path: a workflow another engine holds is skipped, not an error.
            if (!(await this.ownership.claimForRecovery(w.id))) return 0;
            await this.runtime.drive(w.id);
            return 1;
          }),
        );
        recovered += batch.reduce<number>((a, b) => a + b, 0);
      }
    }
    return { recovered };
  }

  /** One round of background work (for backgroundTasks 'manual'): renewal, reclaim, polls, due timers. */
  async runMaintenance(): Promise<{ pass: PassReport | null; timersFired: number }> {
    this.assertOpen();
    const pass = this.ownership.scheduler ? await this.ownership.scheduler.runPass() : null;
    this.lastPassAt = new Date();
    const timersFired = await this.transitions.processDueTimers();
    return { pass, timersFired };
  }

  /**
   * Stops the renewal scheduler first (no reclaim lands after), then the timer loop, lets
   * running steps finish for the grace period, drops the rest (they re-run elsewhere or after a
   * restart), releases every held claim and closes what it opened. Safe to call twice; reports
   * whether every release succeeded.
   */
  dispose(): Promise<{ released: number; failed: number }> {
    this.disposed ??= (async () => {
      await this.ownership.scheduler?.stop();
      await this.timers.stop();
      await this.bootstrapping?.catch(() => undefined);
      const until = Date.now() + this.options.shutdownGraceMs;
      while (this.runtime.inflightSteps() > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      await this.runtime.close();
      const report = await this.ownership.dispose().catch(() => ({ released: 0, failed: -1 }));
      if (this.ownsDatabase) await this.database.close();
      return report;
    })();
    return this.disposed;
  }

  /** What health checks need; cheap, no I/O. */
  healthSnapshot(): EngineHealthSnapshot {
    return {
      engineId: this.engineId,
      ownership: this.ownership.mode,
      bootstrapped: this.started,
      disposed: this.disposed !== undefined,
      backgroundTasks: this.options.backgroundTasks,
      lastBackgroundPassAt: this.ownership.scheduler ? this.ownership.scheduler.lastPassAt : this.lastPassAt,
      backgroundIntervalMs: this.ownership.scheduler ? this.ownership.scheduler.intervalMs : this.options.timerPollMs,
      liveWorkflows: this.runtime.live.size,
      claimsHeld: this.ownership.registry?.held.size ?? (this.ownership.lease?.held ? 1 : 0),
      renewalFailures: this.ownership.registry?.renewalFailures ?? 0,
    };
  }

  get isDisposed(): boolean {
    return this.disposed !== undefined;
  }

  /** Under ownership 'lease' only the holder starts anything. */
  private assertCanRun(): void {
    this.assertOpen();
    if (this.ownership.lease && !this.ownership.holds('')) throw new EngineLeaseNotHeldError(this.engineId, null);
  }

  private assertOpen(): void {
    if (this.disposed) throw new EngineDisposedError();
  }
}
