import { randomUUID } from 'node:crypto';
import {
  EngineDisposedError,
  EngineLeaseNotHeldError,
  EngineNotReadyError,
  InvalidArgumentError,
  ResultTimeoutError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
} from '../common/errors.js';
import { resolveOwnership } from '../ownership/config.js';
import { createOwnershipPolicy } from '../ownership/create-policy.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { PassReport } from '../ownership/renewal-scheduler.js';
import { openDatabase, OpenedDatabase } from '../storage/data-source.js';
import { AmbientTransactions } from './ambient/ambient-transactions.js';
import { PlanFreshness } from '../storage/plan-freshness.js';
import { WorkflowStore } from '../storage/workflow-store.js';
import { Payloads } from '../storage/payloads.js';
import { Duration, parseDuration } from '../common/duration.js';
import { GroupCommitter } from './group-committer.js';
import { WorkflowHandle } from './handle.js';
import { ResolvedEngineOptions, resolveEngineOptions, validatePoolSize, WeftEngineOptions } from './options.js';
import { WorkflowClass, WorkflowRegistry } from './registry.js';
import { settledValue } from './results.js';
import { Runtime } from './run/runtime.js';
import { Starter } from './starter.js';
import { NO_HEADERS } from './interceptors.js';
import { WeftSchedules } from './schedules/schedules.js';
import { Retention } from './retention.js';
import { QueueAdmission } from './queues/admission.js';
import { NOT_STARTED_POLL_MS, ResultPoll } from './result-poll.js';
import type { SettledSubscription } from './run/settled-waiters.js';
import type { Settled } from './settled.js';
import { resolveQueues, type QueueView } from './queues/options.js';
import { queuePartitions, type QueuePartitionsView } from './queues/partition-view.js';
import { QueueSlots } from './queues/slots.js';
import { TimerLoop } from './timer-loop.js';
import { isTerminal, Transitions } from './transitions.js';
import { Messaging } from './messaging.js';
import type {
  CancelOptions,
  EngineHealthSnapshot,
  ListFilter,
  ListPage,
  SignalOptions,
  StartOptions,
  StreamEntry,
  WorkflowDefinition,
  WorkflowDescription,
} from '../common/types.js';
import { CallerTransactions, type CallerTransaction } from './caller-transaction.js';
import type { EntityManager } from 'typeorm';
import type { ForkOptions, Repair } from './repair.js';
import type { WorkflowReplayer } from './replayer.js';
import { UpdateCalls } from './update-calls.js';
import { AdminCalls } from './admin-calls.js';
import { getEvent } from './events.js';
import { checkStreamArgs, readStream } from './streams.js';
import { TalkWaiters } from './talk-waiters.js';

import { toStoredJson, validateName, validateReason, validateWorkflowId } from './validation.js';
import { describeError } from './error-record.js';

export type { EngineHealthSnapshot } from '../common/types.js';
export type { QueueView } from './queues/options.js';
export type { PartitionFigures, QueuePartitionsView } from './queues/partition-view.js';
export type { ForkOptions } from './repair.js';

/** The durable workflow engine. Plain class: no Nest dependency. */
export class WeftEngine {
  readonly engineId: string;
  /** @internal */
  readonly store: WorkflowStore;
  /** result() of runs that do not end here: their status reads, batched. */
  private readonly resultPoll: ResultPoll;
  /** @internal */
  readonly registry = new WorkflowRegistry();
  /** @internal */
  readonly options: ResolvedEngineOptions;
  /** @internal */
  readonly ownership: OwnershipPolicy;
  /** The database it runs on: its DataSource, schema and where it is (docs/api.md). */
  readonly database: OpenedDatabase;
  private readonly starter: Starter;
  /** Schedules: create, update, pause, unpause, trigger, delete, describe, list (docs/schedules.md). */
  readonly schedules: WeftSchedules;
  private readonly retention: Retention;
  private readonly plans: PlanFreshness;
  private readonly queues: QueueAdmission;
  private readonly messaging: Messaging;
  private readonly waiters = new TalkWaiters();
  private readonly runtime: Runtime;
  /** Libraries' ambient transactions that transactional bodies and starts join (docs/transactions.md). */
  private readonly ambient: AmbientTransactions;
  /** The caller's transactions that starts, signals and cancels write in (docs/transactions.md). */
  private readonly callerTransactions: CallerTransactions;
  private readonly timers: TimerLoop;
  private readonly transitions: Transitions;
  /** update and updateWithStart. */
  private readonly updates: UpdateCalls;
  /** describe, list, fork, retry, purge. */
  private readonly admin: AdminCalls;
  private disposed: Promise<{ released: number; failed: number }> | undefined;
  private started = false;
  private bootstrapping: Promise<void> | undefined;
  private ownershipReady: Promise<void> | undefined;
  private lastPassAt: Date | null = null;

  /** @internal Use WeftEngine.create(options), or WeftModule in a Nest app. */
  constructor(
    database: OpenedDatabase,
    options: WeftEngineOptions = {},
    private readonly ownsDatabase = false,
  ) {
    this.database = database;
    this.engineId = options.engineId ?? randomUUID();
    this.options = resolveEngineOptions(options, this.engineId);
    const clock = this.options.clock;
    this.store = new WorkflowStore(database.sql, database.schema, () => clock.offsetMs(), new Payloads(options.codec));
    this.ambient = new AmbientTransactions(options.ambientTransactions);
    this.callerTransactions = new CallerTransactions({ dataSource: database.dataSource, via: database.sql }, this.ambient);
    this.resultPoll = new ResultPoll((ids) => this.store.workflows.statuses(ids));
    // The policy calls back into the runtime only once the engine runs (bootstrap and after).
    this.ownership = createOwnershipPolicy({
      sql: database.sql,
      schema: database.schema,
      engineId: this.engineId,
      config: resolveOwnership(options),
      logger: this.options.logger,
      metrics: options.metrics,
      onWarning: options.onWarning,
      runtime: {
        stopLive: (id) => this.runtime.stopLive(id),
        drive: (id) => this.runtime.drive(id),
        halt: () => this.runtime.halt(),
        registeredTypes: () => this.registry.names(),
        poll: () => this.messaging.poll(),
      },
    });
    const queues = resolveQueues(options.queues);
    const slots = new QueueSlots({ store: this.store, queues, logger: this.options.logger, freed: (q) => this.queues.nudge(0, q) });
    this.runtime = new Runtime({
      slots,
      store: this.store,
      committer: new GroupCommitter(this.store),
      registry: this.registry,
      options: this.options,
      ownership: this.ownership,
      children: {
        // A child is started also while this engine shuts down (it drains).
        start: (parentId, childId, type, input, seq, headers) => this.starter.startChild(parentId, childId, type, input, seq, headers),
        terminated: (id, children, endsSingleton) => {
          this.queues.ended(id); // a queued run's end frees its slot: admit the next one now
          // Its singleton key is free: the oldest start waiting for it fires now (undefined: an external end, not known).
          if (endsSingleton !== false) this.wakeSingletonWaiter(id);
          if (!children || children.length) this.transitions.closeChildren(id, children);
        },
      },
      external: {
        start: (type, input, workflowId, headers) => this.starter.start({ type, input, opts: { workflowId }, headers }),
        cancel: (id, reason) =>
          this.transitions.cancel(id, reason).then(
            () => undefined,
            (err: unknown) => {
              // Already ended (by an earlier try of this very call, say): nothing left to cancel.
              if (!(err instanceof WorkflowNotRunningError)) throw err;
            },
          ),
        status: async (id) => (await this.store.workflows.get(id))?.status ?? null,
      },
      fireOwnTimer: (id, seq) => this.transitions.fireOwn(id, seq),
      ambient: this.ambient,
      handoff: {
        request: (queue) => this.queues.handoffRequest(queue),
        ended: (queue, fromId, h, sentAt) => this.queues.endCommitted(queue, fromId, h, sentAt),
      },
    });
    this.transitions = new Transitions({
      store: this.store,
      runtime: this.runtime,
      registry: this.registry,
      ownership: this.ownership,
      logger: this.options.logger,
      enqueued: (queue) => this.queues.nudge(0, queue),
    });
    this.messaging = new Messaging({
      store: this.store,
      runtime: this.runtime,
      registry: this.registry,
      options: this.options,
      sql: database.sql,
      ownership: this.ownership,
      isDisposed: () => this.disposed !== undefined,
      waiters: this.waiters,
      queueFreed: (queue, engineId) => this.queues.freedElsewhere(queue, engineId),
    });
    this.queues = new QueueAdmission({
      store: this.store,
      registry: this.registry,
      ownership: this.ownership,
      runtime: this.runtime,
      options: this.options,
      queues,
      slots,
      engineId: this.engineId,
      mayAdmit: () => !this.disposed && !this.runtime.isDraining && !this.ownership.gate.isHalted && this.ownership.gate.mayRunAnything(),
    });
    this.starter = new Starter({
      queues: this.queues,
      store: this.store,
      registry: this.registry,
      options: this.options,
      ownership: this.ownership,
      runtime: this.runtime,
      messaging: this.messaging,
      nudgeTimersAt: (at) => this.timers.nudgeAt(at),
    });
    this.schedules = new WeftSchedules({
      repo: this.store.schedules,
      workflows: this.store.workflows,
      starter: this.starter,
      registry: this.registry,
      options: this.options,
      cancel: async (id, reason) => void (await this.transitions.cancel(id, reason)),
      assertCanRun: () => this.assertCanRun(),
      assertOpen: () => this.assertOpen(),
      mayFire: () => !this.disposed && !this.runtime.isDraining && !this.ownership.gate.isHalted && this.ownership.gate.mayRunAnything(),
    });
    const guards = { assertOpen: () => this.assertOpen(), assertCanRun: () => this.assertCanRun() };
    this.updates = new UpdateCalls({
      registry: this.registry,
      options: this.options,
      starter: this.starter,
      messaging: this.messaging,
      ...guards,
    });
    this.admin = new AdminCalls({
      store: this.store,
      registry: this.registry,
      runtime: this.runtime,
      ownership: this.ownership,
      options: this.options,
      ...guards,
    });
    this.retention = new Retention({ workflows: this.store.workflows, sql: database.sql, options: this.options });
    this.plans = new PlanFreshness(database.sql, database.schema);
    this.timers = new TimerLoop(
      async () => {
        // A deposed lease holder takes no timers: they are the new holder's (ownership 'lease').
        if (this.ownership.gate.isHalted) return;
        this.lastPassAt = new Date();
        await this.transitions.processDueTimers();
        await this.schedules.fireDue();
        await this.retention.maybeRun();
        await this.refreshPlans();
        // Without a maintenance pass of the policy, the timer tick is also the owner-side poll.
        if (!this.ownership.maintenance.pollsMessages) await this.messaging.poll();
      },
      this.options.timerPollMs,
      (err) => this.options.logger.warn(`Timer poll failed: ${(err as Error).message}`),
      clock,
    );
  }

  /** Opens (and migrates) the configured database and builds an engine that closes it on dispose. */
  static async create(options: WeftEngineOptions = {}): Promise<WeftEngine> {
    validatePoolSize(options.database);
    const db = await openDatabase({ database: options.database, schema: options.schema, log: (l) => options.logger?.log(l) });
    try {
      const engine = new WeftEngine(db, options, true);
      await engine.ambient.load();
      return engine;
    } catch (err) {
      await db.close(); // a bad option must not leave the pool it opened behind
      throw err;
    }
  }

  /** A workflow that may have held a singleton key ended here: the start waiting for it fires now, not at its recheck. */
  private wakeSingletonWaiter(workflowId: string): void {
    void this.store.singletonWaits.wakeNext(workflowId).then(
      (woke) => woke && this.timers.nudgeAt(this.options.clock.now()),
      (err: unknown) =>
        this.options.logger.warn(`A queued singleton start could not be woken (its recheck starts it): ${(err as Error).message}`),
    );
  }

  /** The declared queues with their limits, and enqueued/running as of the last admission pass. */
  queueViews(): QueueView[] {
    const figures = this.queues.snapshot();
    return [...this.queues.declared.values()].map((q) => ({ ...q, ...(figures[q.name] ?? { enqueued: 0, running: 0 }) }));
  }

  /** A queue's partition keys with work, busiest first (`limit`: 1 to 100, default 20); docs/queues.md. */
  queuePartitions(queue: string, opts?: { limit?: number }): Promise<QueuePartitionsView> {
    return queuePartitions(this.queues.declared, this.store.workflows, queue, opts);
  }

  /** The registered workflow types (WorkflowReplayer.forEngine replays against them). */
  definitions(): WorkflowDefinition[] {
    return this.registry.all();
  }

  /** Registers a workflow type: a class with run(ctx, input), or a definition with a factory. */
  register(nameOrDef: string | WorkflowDefinition, cls?: WorkflowClass): this {
    if (typeof nameOrDef === 'string') {
      if (typeof cls !== 'function') throw new InvalidArgumentError(`workflow "${nameOrDef}"`, 'needs a class');
      const Cls = cls as unknown as new () => InstanceType<WorkflowClass>;
      this.registry.register({ name: nameOrDef, factory: () => new Cls() });
    } else {
      for (const s of nameOrDef.schedules ?? []) this.schedules.declare({ ...s, workflowType: nameOrDef.name });
      this.queues.checkDefinition(nameOrDef);
      this.registry.register(nameOrDef);
    }
    return this;
  }

  /**
   * Ownership bootstrap (gates, lease), then recovery of running workflows, then the
   * background loops (unless backgroundTasks is 'manual').
   */
  async bootstrap(): Promise<void> {
    this.assertOpen();
    if (this.bootstrapping) return this.bootstrapping;
    this.ownershipReady = this.ownership.maintenance.bootstrap();
    this.ownershipReady.catch(() => undefined);
    this.bootstrapping = (async () => {
      await this.ownershipReady;
      await this.refreshPlans(true); // the tables' sizes now: later growth is measured from here
      await this.options.tracing.ready(); // before recovery, so recovered runs are traced
      await this.schedules.syncDeclared();
      const auto = this.options.backgroundTasks === 'auto';
      if (this.options.notify && auto) await this.messaging.listen();
      // Renewal first: a recovery that claims thousands of workflows takes longer than a TTL.
      if (auto && !this.disposed) this.ownership.maintenance.start();
      await this.recoverAll();
      if (auto && !this.disposed) this.timers.start();
      if (auto && !this.disposed) this.queues.start();
      this.started = true;
    })();
    return this.bootstrapping;
  }

  /**
   * Starts bootstrap() and resolves once its fatal part, the ownership bootstrap (gates,
   * lease), has passed, or rejects with that part's typed error. `recovery` is bootstrap()
   * itself, still going on: WeftModule awaits the gates so a mode mismatch fails app.init(),
   * while recovering running workflows does not hold the app's start.
   */
  async bootstrapGates(): Promise<{ recovery: Promise<void> }> {
    const recovery = this.bootstrap();
    recovery.catch(() => undefined); // the caller handles it through `recovery`
    await (this.ownershipReady ?? recovery);
    return { recovery };
  }

  get commitStatements(): number {
    return this.runtime.committer.statements;
  }

  /** Starts a workflow; with idPolicy 'return-existing' (default) an existing id returns its handle. */
  async start<I>(type: string, input: I, opts: StartOptions = {}): Promise<WorkflowHandle> {
    return this.startWith(type, input, opts);
  }

  /**
   * Starts the workflow if needed and sends it a signal; for a new run the signal is stored
   * before the run begins, so its handler sees it before run()'s first line.
   */
  async signalWithStart<I>(
    type: string,
    input: I,
    signal: { name: string; payload?: unknown },
    opts: StartOptions = {},
  ): Promise<WorkflowHandle> {
    this.assertOpen();
    validateName('signal name', signal?.name);
    const payload = toStoredJson(signal.payload ?? null, `Payload of signal "${signal.name}"`, this.options.maxPayloadBytes);
    return this.startWith(type, input, opts, { name: signal.name, payload });
  }

  private async startWith(
    type: string,
    input: unknown,
    opts: StartOptions,
    signal?: { name: string; payload: unknown },
  ): Promise<WorkflowHandle> {
    await this.assertCanRun();
    const tracing = this.options.tracing.ready(); // undefined once loaded: no await per start
    if (tracing) await tracing;
    const tx = await this.callerTransaction(signal ? 'signalWithStart' : 'start', opts?.manager);
    return this.handle(await this.starter.start({ type, input, opts, signal, tx }));
  }

  /** The caller's transaction to write in: `manager`'s, or an ambient one; none without either (no await then). */
  private callerTransaction(operation: string, manager: EntityManager | undefined): Promise<CallerTransaction | undefined> | undefined {
    // Without a manager or an active ambient transaction (most calls), nothing to await.
    if (manager === undefined && !(this.ambient.any && this.ambient.current(this.database.dataSource))) return undefined;
    return this.callerTransactions.resolve(operation, manager);
  }

  /** Send, query and update: see Messaging. After dispose() they reject, like every call here. */
  async signal(workflowId: string, name: string, payload?: unknown, opts: SignalOptions = {}): Promise<void> {
    this.assertOpen();
    const tx = await this.callerTransaction('signal', opts.manager);
    const chain = this.options.interceptors?.signal;
    if (!chain) return this.messaging.signal(workflowId, name, payload ?? null, tx);
    const first = { workflowId, signalName: name, payload: payload ?? null, headers: NO_HEADERS };
    return chain(first, (i) => this.messaging.signal(workflowId, name, i.payload ?? null, tx));
  }

  async update<R = unknown>(workflowId: string, name: string, args?: unknown, opts: { timeout?: Duration } = {}): Promise<R> {
    return this.updates.update<R>(workflowId, name, args, opts);
  }

  /**
   * Starts the workflow, or finds it by `startOpts`' id policy ('return-existing' by default), and
   * sends it the update, in one call: resolves with the update's result (DESIGN 9.3). A new run goes
   * up to its first wait before the handler runs, as any live start does. The start is written
   * outside any caller transaction (this call waits for the handler, which a start not yet
   * committed would never run): `manager` is refused, and an ambient transaction is not joined.
   */
  async updateWithStart<R = unknown, I = unknown>(
    type: string,
    input: I,
    startOpts: StartOptions,
    updateName: string,
    args?: unknown,
    opts: { timeout?: Duration } = {},
  ): Promise<R> {
    return this.updates.updateWithStart<R>(type, input, startOpts, updateName, args, opts);
  }

  async query<R = unknown>(workflowId: string, name: string, args?: unknown): Promise<R> {
    this.assertOpen();
    return this.messaging.query<R>(workflowId, name, args);
  }

  /**
   * Completes a step run with `{ complete: 'external' }` with `result`, given the token its body
   * got (`currentStep().completionToken`), from any engine: once; a second completion of the same
   * attempt gets StepAlreadyCompletedError (docs/long-steps.md).
   */
  async completeStep(token: string, result?: unknown): Promise<void> {
    this.assertOpen();
    const value = toStoredJson(result ?? null, 'Result of an externally completed step', this.options.maxPayloadBytes);
    return this.runtime.completions.complete(token, { ok: true, value });
  }

  /**
   * Fails that attempt with `error` (recorded as a step's error; an Error keeps its name, code and
   * details, and a NonRetryableError stops the retries): it counts as a failed attempt, retried per
   * the step's policy. Once, as completeStep.
   */
  async failStep(token: string, error: unknown): Promise<void> {
    this.assertOpen();
    return this.runtime.completions.complete(token, { ok: false, error: describeError(error) as Record<string, unknown> });
  }

  /**
   * The value a workflow published with ctx.setEvent under `key`, waiting for it up to `timeout`
   * (default 60 s), woken by the NOTIFY of the commit that writes it; null on timeout, or at once
   * when the workflow ended without it (docs/events-and-streams.md).
   */
  async getEvent<T = unknown>(workflowId: string, key: string, opts: { timeout?: Duration } = {}): Promise<T | null> {
    this.assertOpen();
    return getEvent<T>({ store: this.store, waiters: this.waiters, isClosed: () => this.disposed !== undefined }, workflowId, key, opts);
  }

  /**
   * The entries of a workflow's stream `key` from offset `from` (inclusive, default 0), as an async
   * iterator that waits for new entries and ends once the stream is closed or the workflow ended
   * (docs/events-and-streams.md). Breaking out of the loop stops it.
   */
  readStream(workflowId: string, key: string, opts: { from?: number } = {}): AsyncIterable<StreamEntry> {
    this.assertOpen();
    const from = checkStreamArgs(workflowId, key, opts.from);
    return readStream({ store: this.store, waiters: this.waiters, isClosed: () => this.disposed !== undefined }, workflowId, key, from);
  }

  handle(workflowId: string): WorkflowHandle {
    return new WorkflowHandle(this, workflowId);
  }

  /** Waits for the workflow to end; returns its output or throws WorkflowFailedError. */
  async result<O = unknown>(workflowId: string, opts: { timeout?: Duration } = {}): Promise<O> {
    this.assertOpen();
    validateWorkflowId(workflowId);
    const timeoutMs = opts.timeout === undefined ? Infinity : parseDuration(opts.timeout, 'result timeout');
    const deadline = Date.now() + timeoutMs;
    const sub = this.runtime.subscribeSettled(workflowId);
    try {
      // Running here: its end is announced locally, no need to read storage first.
      if (this.runtime.isLive(workflowId)) {
        const s = await sub.wait(Math.min(timeoutMs, 1000));
        if (s) return settledValue<O>(workflowId, s);
      }
      for (;;) {
        this.assertOpen(); // disposed while it waited
        // The row itself only once the status read shared with other waiters says it ended (or is absent).
        const row = (await this.resultPoll.look(workflowId)).ended
          ? await this.store.workflows.get(workflowId).catch((err: unknown) => {
              this.assertOpen(); // the read failed because dispose() closed the database
              throw err;
            })
          : undefined;
        if (row === null) throw new WorkflowNotFoundError(workflowId);
        if (row && isTerminal(row.status)) return settledValue<O>(workflowId, row);
        const s = await this.untilEnded(workflowId, sub, deadline, timeoutMs);
        if (s) return settledValue<O>(workflowId, s);
      }
    } finally {
      sub.cancel();
    }
  }

  /**
   * Until it ends here (resolves with how), or the shared status read says it ended (null: read
   * the row). A run live here announces its end here: no read while it is.
   */
  private async untilEnded(workflowId: string, sub: SettledSubscription, deadline: number, timeoutMs: number): Promise<Settled | null> {
    let pollMs = 20;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new ResultTimeoutError(workflowId, timeoutMs);
      const s = await sub.wait(Math.min(pollMs, left));
      if (s) return s;
      this.assertOpen();
      if (this.runtime.isLive(workflowId)) {
        pollMs = 500;
        continue;
      }
      const look = await this.resultPoll.look(workflowId);
      if (look.ended) return null;
      // Not started yet: if it is admitted here, its end is announced here.
      pollMs = look.notStarted ? NOT_STARTED_POLL_MS : Math.min(pollMs * 2, 500);
    }
  }

  async describe(workflowId: string): Promise<WorkflowDescription> {
    return this.admin.describe(workflowId);
  }

  async list(filter: ListFilter = {}): Promise<ListPage> {
    return this.admin.list(filter);
  }

  /**
   * Cancels a workflow (docs/cancellation.md): a running one is asked, and its code gets
   * WorkflowCancelledError at its current wait (step bodies see their signal abort); it ends
   * `cancelled` when the code lets the error through, `completed` when it catches it and returns,
   * and `cancelled` in any case once `cancelGracePeriod` has passed. One that is pending, enqueued
   * or suspended is cancelled at once. Resolves once the request is stored; a second request
   * adds nothing. WorkflowNotRunningError when it already ended.
   */
  async cancel(workflowId: string, reasonOrOptions: string | CancelOptions = 'Cancelled'): Promise<void> {
    const opts = typeof reasonOrOptions === 'string' ? { reason: reasonOrOptions } : (reasonOrOptions ?? {});
    const reason = opts.reason ?? 'Cancelled';
    validateReason('cancel reason', reason);
    await this.assertCanRun();
    const tx = await this.callerTransaction('cancel', opts.manager);
    await this.transitions.cancel(workflowId, reason, tx);
    // A run live here takes the request now, without waiting for its NOTIFY.
    if (tx) tx.onCommit(() => this.messaging.onNotify(workflowId));
    else this.messaging.onNotify(workflowId);
  }

  /** Stops a running workflow without ending it; resume() continues it by replay. */
  async suspend(workflowId: string, reason = 'Suspended by an operator'): Promise<void> {
    validateReason('suspend reason', reason);
    await this.assertCanRun();
    await this.transitions.suspend(workflowId, reason);
  }

  /** Continues a suspended workflow here; WorkflowClaimUnavailableError if another engine holds it. */
  async resume(workflowId: string): Promise<void> {
    await this.assertCanRun();
    await this.transitions.resume(workflowId);
  }

  /**
   * A new workflow with `workflowId`'s history before `fromStep` (a seq, or a step name's first
   * operation), running that step and the rest on the current code (docs/api.md, "Repair"). The
   * kept part is replayed first: a divergence is ForkRefusedError with the replayer's report.
   */
  async fork(workflowId: string, opts: ForkOptions): Promise<WorkflowHandle> {
    return this.handle(await this.admin.fork(workflowId, opts));
  }

  /**
   * A failed workflow goes on from its failed step (run again on the current code) as its next
   * run under the same id; the steps before it are not run again. Checked as fork is.
   */
  async retry(workflowId: string): Promise<WorkflowHandle> {
    return this.handle(await this.admin.retry(workflowId));
  }

  /**
   * @internal The CLI's fork and retry: checked against `workflows` (the app's code), the repaired
   * run left to the engines that run its type.
   */
  repairsWith(workflows: ConstructorParameters<typeof WorkflowReplayer>[0]): Repair {
    return this.admin.repairsWith(workflows);
  }

  /**
   * Deletes one ended workflow with its history and its descendants (docs/retention.md). Refused
   * with WorkflowPurgeRefusedError while it, its parent or a descendant still runs. Its claim
   * epoch is kept, so the id may be started again without reusing a fence.
   */
  async purge(workflowId: string): Promise<void> {
    return this.admin.purge(workflowId);
  }

  /** Replays and continues every running workflow of a registered type not already live here. */
  async recoverAll(): Promise<{ recovered: number }> {
    this.assertOpen();
    return this.transitions.recoverAll();
  }

  /**
   * Cached plans follow the tables' growth (storage/plan-freshness.ts). A failed read of the
   * sizes only postpones that: the statements still run.
   */
  private async refreshPlans(now = false): Promise<void> {
    await (now ? this.plans.refresh() : this.plans.maybeRefresh()).catch((err) =>
      this.options.logger.warn(`Reading the table sizes failed: ${(err as Error).message}`),
    );
  }

  /** One round of background work (for backgroundTasks 'manual'): renewal, reclaim, polls, due timers. */
  async runMaintenance(): Promise<{
    pass: PassReport | null;
    timersFired: number;
    schedulesFired: number;
    purged: number;
    admitted: number;
  }> {
    this.assertOpen();
    const pass = await this.ownership.maintenance.runPass();
    this.lastPassAt = new Date();
    const timersFired = this.ownership.gate.isHalted ? 0 : await this.transitions.processDueTimers();
    const schedulesFired = await this.schedules.fireDue();
    const purged = await this.retention.runPass();
    await this.refreshPlans(true);
    const admitted = await this.queues.pass(true);
    // Without a maintenance pass of the policy (ownership 'none'), the owner-side poll is here.
    if (!this.ownership.maintenance.pollsMessages) await this.messaging.poll();
    return { pass, timersFired, schedulesFired, purged, admitted };
  }

  /**
   * @internal For the testing kit's clock (testing/): fires what is due on workflow time now
   * (timers, delayed starts, deadlines, schedules), admits queued runs and delivers buffered
   * messages, as a background tick does.
   */
  async fireDue(): Promise<void> {
    this.assertOpen();
    if (this.ownership.gate.isHalted) return;
    await this.transitions.processDueTimers();
    await this.schedules.fireDue();
    await this.queues.pass();
    await this.messaging.poll();
  }

  /** @internal Every run live here waits (parked or in a retry backoff) and nothing is being fired, loaded or fetched for it. */
  get isQuiet(): boolean {
    return this.runtime.isQuiet && this.messaging.isQuiet;
  }

  /**
   * @internal The testing kit's autoSkip: true when workflows are live and every one of them
   * waits on time (a stored timer, a live child, or a step's retry backoff here).
   */
  async allWaitOnTime(): Promise<boolean> {
    const { live, untimed } = await this.store.workflows.untimed();
    return live > 0 && untimed.every((id) => this.runtime.liveRun(id)?.inBackoffOnly === true);
  }

  /** @internal The earliest timer or schedule fire of this schema after `after` (workflow time, epoch ms), or null. */
  async nextDueAt(after: number): Promise<number | null> {
    const at = new Date(after);
    const [t, s] = await Promise.all([this.store.timers.nextFireAt(at), this.store.schedules.nextFireAt(at)]);
    const times = [t, s].filter((d): d is Date => d !== null).map((d) => d.getTime());
    return times.length ? Math.min(...times) : null;
  }

  /**
   * Graceful: stops the reclaim scan first (no takeover lands after shutdown began), then the
   * timer loop and LISTEN; running step bodies get the grace period to finish and their results
   * are committed, while no new body or child starts; what is left stays `running` for another
   * engine (a shutdown never changes an outcome: docs/concepts.md). Claims keep being renewed until
   * then, and are released at the end. Safe to call twice; reports whether every release
   * succeeded.
   */
  dispose(): Promise<{ released: number; failed: number }> {
    this.disposed ??= (async () => {
      this.runtime.beginDrain();
      this.waiters.wakeAll(); // getEvent and readStream callers end now, before the database closes
      await this.ownership.maintenance.stop();
      await this.timers.stop();
      await this.queues.stop();
      await this.messaging.close();
      await this.bootstrapping?.catch(() => undefined);
      await this.runtime.drain(Date.now() + this.options.shutdownGraceMs);
      await this.runtime.close();
      await this.transitions.putBackTaken().catch(() => undefined); // before the claims go: see there
      const report = await this.ownership.maintenance.dispose().catch(() => ({ released: 0, failed: -1 }));
      if (this.ownsDatabase) await this.database.close();
      return report;
    })();
    return this.disposed;
  }

  /** What health checks need; cheap, no I/O. */
  healthSnapshot(): EngineHealthSnapshot {
    const { halted, claimsHeld, renewalFailures, lastPassAt, intervalMs } = this.ownership.figures();
    return {
      engineId: this.engineId,
      ownership: this.ownership.mode,
      bootstrapped: this.started,
      disposed: this.disposed !== undefined,
      halted,
      backgroundTasks: this.options.backgroundTasks,
      lastBackgroundPassAt: lastPassAt === undefined ? this.lastPassAt : lastPassAt,
      backgroundIntervalMs: intervalMs ?? this.options.timerPollMs,
      liveWorkflows: this.runtime.liveCount,
      claimsHeld,
      renewalFailures,
      queues: this.queues.snapshot(),
    };
  }

  get isDisposed(): boolean {
    return this.disposed !== undefined;
  }

  /**
   * Fencing modes: nothing runs before the ownership bootstrap (gates, lease) has succeeded; a
   * call made while it is under way waits for it. Under 'lease' only the holder runs anything.
   */
  private async assertCanRun(): Promise<void> {
    this.assertOpen();
    if (!this.ownership.maintenance.requiresBootstrap) return;
    if (!this.ownershipReady)
      throw new EngineNotReadyError(this.engineId, 'call engine.bootstrap() first (WeftModule does it at application bootstrap)');
    await this.ownershipReady.catch((err: Error) => {
      if (err instanceof EngineLeaseNotHeldError) throw err;
      throw new EngineNotReadyError(this.engineId, `its ownership bootstrap failed: ${err.message}`, { cause: err });
    });
    if (!this.ownership.gate.mayRunAnything()) throw new EngineLeaseNotHeldError(this.engineId, null);
  }

  private assertOpen(): void {
    if (this.disposed) throw new EngineDisposedError();
  }
}
