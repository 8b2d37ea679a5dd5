import { randomUUID } from 'node:crypto';
import { InvalidArgumentError } from '../common/errors.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { PassReport } from '../ownership/renewal-scheduler.js';
import { openDatabase, OpenedDatabase } from '../storage/data-source.js';
import type { AmbientTransactions } from './ambient/ambient-transactions.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { Duration } from '../common/duration.js';
import { WorkflowHandle } from './handle.js';
import { ResolvedEngineOptions, validatePoolSize, WeftEngineOptions } from './options.js';
import type { WorkflowClass, WorkflowRegistry } from './registry.js';
import type { Runtime } from './run/runtime.js';
import type { Starter } from './starter.js';
import { NO_HEADERS } from './interceptors.js';
import type { WeftSchedules } from './schedules/schedules.js';
import type { QueueAdmission } from './queues/admission.js';
import type { QueueView } from './queues/options.js';
import { queuePartitions, type QueuePartitionsView } from './queues/partition-view.js';
import type { Transitions } from './transitions.js';
import type { Messaging } from './messaging.js';
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
import type { CallerTransactions } from './caller-transaction.js';
import type { ForkOptions, Repair } from './repair.js';
import type { WorkflowReplayer } from './replayer.js';
import type { UpdateCalls } from './update-calls.js';
import type { AdminCalls } from './admin-calls.js';
import { getEvent } from './events.js';
import { checkStreamArgs, readStream } from './streams.js';
import type { TalkWaiters } from './talk-waiters.js';
import type { StartCalls } from './start-calls.js';
import type { ResultWait } from './result-wait.js';
import type { BackgroundWork } from './background.js';
import type { EngineLifecycle } from './lifecycle.js';
import { wireEngine } from './wiring.js';
import { toStoredJson, validateReason } from './validation.js';
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
  /** @internal */
  readonly registry: WorkflowRegistry;
  /** @internal */
  readonly options: ResolvedEngineOptions;
  /** @internal */
  readonly ownership: OwnershipPolicy;
  /** The database it runs on: its DataSource, schema and where it is (docs/api.md). */
  readonly database: OpenedDatabase;
  private readonly starter: Starter;
  /** Schedules: create, update, pause, unpause, trigger, delete, describe, list (docs/schedules.md). */
  readonly schedules: WeftSchedules;
  private readonly queues: QueueAdmission;
  private readonly messaging: Messaging;
  private readonly waiters: TalkWaiters;
  private readonly runtime: Runtime;
  /** Libraries' ambient transactions that transactional bodies and starts join (docs/transactions.md). */
  private readonly ambient: AmbientTransactions;
  /** The caller's transactions that starts, signals and cancels write in (docs/transactions.md). */
  private readonly callerTransactions: CallerTransactions;
  private readonly transitions: Transitions;
  /** start and signalWithStart. */
  private readonly starts: StartCalls;
  /** result(). */
  private readonly results: ResultWait;
  /** The timer loop's tick, runMaintenance, and what the testing kit's clock asks. */
  private readonly background: BackgroundWork;
  /** bootstrap, dispose, the guards every call passes, the health snapshot. */
  private readonly lifecycle: EngineLifecycle;
  /** update and updateWithStart. */
  private readonly updates: UpdateCalls;
  /** describe, list, fork, retry, purge. */
  private readonly admin: AdminCalls;

  /** @internal Use WeftEngine.create(options), or WeftModule in a Nest app. */
  constructor(database: OpenedDatabase, options: WeftEngineOptions = {}, ownsDatabase = false) {
    this.database = database;
    this.engineId = options.engineId ?? randomUUID();
    const parts = wireEngine(database, options, this.engineId, ownsDatabase);
    this.options = parts.options;
    this.store = parts.store;
    this.registry = parts.registry;
    this.ownership = parts.ownership;
    this.ambient = parts.ambient;
    this.callerTransactions = parts.callerTransactions;
    this.waiters = parts.waiters;
    this.runtime = parts.runtime;
    this.transitions = parts.transitions;
    this.messaging = parts.messaging;
    this.queues = parts.queues;
    this.starter = parts.starter;
    this.schedules = parts.schedules;
    this.starts = parts.starts;
    this.updates = parts.updates;
    this.admin = parts.admin;
    this.results = parts.results;
    this.background = parts.background;
    this.lifecycle = parts.lifecycle;
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
    return this.lifecycle.bootstrap();
  }

  /**
   * Starts bootstrap() and resolves once its fatal part, the ownership bootstrap (gates,
   * lease), has passed, or rejects with that part's typed error. `recovery` is bootstrap()
   * itself, still going on: WeftModule awaits the gates so a mode mismatch fails app.init(),
   * while recovering running workflows does not hold the app's start.
   */
  async bootstrapGates(): Promise<{ recovery: Promise<void> }> {
    return this.lifecycle.bootstrapGates();
  }

  get commitStatements(): number {
    return this.runtime.committer.statements;
  }

  /** Starts a workflow; with idPolicy 'return-existing' (default) an existing id returns its handle. */
  async start<I>(type: string, input: I, opts: StartOptions = {}): Promise<WorkflowHandle> {
    return this.handle(await this.starts.start(type, input, opts));
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
    return this.handle(await this.starts.signalWithStart(type, input, signal, opts));
  }

  /** Send, query and update: see Messaging. After dispose() they reject, like every call here. */
  async signal(workflowId: string, name: string, payload?: unknown, opts: SignalOptions = {}): Promise<void> {
    this.lifecycle.assertOpen();
    const tx = await this.callerTransactions.join('signal', opts.manager);
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
    this.lifecycle.assertOpen();
    return this.messaging.query<R>(workflowId, name, args);
  }

  /**
   * Completes a step run with `{ complete: 'external' }` with `result`, given the token its body
   * got (`currentStep().completionToken`), from any engine: once; a second completion of the same
   * attempt gets StepAlreadyCompletedError (docs/long-steps.md).
   */
  async completeStep(token: string, result?: unknown): Promise<void> {
    this.lifecycle.assertOpen();
    const value = toStoredJson(result ?? null, 'Result of an externally completed step', this.options.maxPayloadBytes);
    return this.runtime.completions.complete(token, { ok: true, value });
  }

  /**
   * Fails that attempt with `error` (recorded as a step's error; an Error keeps its name, code and
   * details, and a NonRetryableError stops the retries): it counts as a failed attempt, retried per
   * the step's policy. Once, as completeStep.
   */
  async failStep(token: string, error: unknown): Promise<void> {
    this.lifecycle.assertOpen();
    return this.runtime.completions.complete(token, { ok: false, error: describeError(error) as Record<string, unknown> });
  }

  /**
   * The value a workflow published with ctx.setEvent under `key`, waiting for it up to `timeout`
   * (default 60 s), woken by the NOTIFY of the commit that writes it; null on timeout, or at once
   * when the workflow ended without it (docs/events-and-streams.md).
   */
  async getEvent<T = unknown>(workflowId: string, key: string, opts: { timeout?: Duration } = {}): Promise<T | null> {
    this.lifecycle.assertOpen();
    return getEvent<T>({ store: this.store, waiters: this.waiters, isClosed: () => this.lifecycle.isDisposed }, workflowId, key, opts);
  }

  /**
   * The entries of a workflow's stream `key` from offset `from` (inclusive, default 0), as an async
   * iterator that waits for new entries and ends once the stream is closed or the workflow ended
   * (docs/events-and-streams.md). Breaking out of the loop stops it.
   */
  readStream(workflowId: string, key: string, opts: { from?: number } = {}): AsyncIterable<StreamEntry> {
    this.lifecycle.assertOpen();
    const from = checkStreamArgs(workflowId, key, opts.from);
    return readStream({ store: this.store, waiters: this.waiters, isClosed: () => this.lifecycle.isDisposed }, workflowId, key, from);
  }

  handle(workflowId: string): WorkflowHandle {
    return new WorkflowHandle(this, workflowId);
  }

  /** Waits for the workflow to end; returns its output or throws WorkflowFailedError. */
  result<O = unknown>(workflowId: string, opts: { timeout?: Duration } = {}): Promise<O> {
    // Not async: a backlog's awaited handles each hold one promise the less (ResultWait.result is).
    return this.results.result<O>(workflowId, opts);
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
    await this.lifecycle.assertCanRun();
    const tx = await this.callerTransactions.join('cancel', opts.manager);
    await this.transitions.cancel(workflowId, reason, tx);
    // A run live here takes the request now, without waiting for its NOTIFY.
    if (tx) tx.onCommit(() => this.messaging.onNotify(workflowId));
    else this.messaging.onNotify(workflowId);
  }

  /** Stops a running workflow without ending it; resume() continues it by replay. */
  async suspend(workflowId: string, reason = 'Suspended by an operator'): Promise<void> {
    validateReason('suspend reason', reason);
    await this.lifecycle.assertCanRun();
    await this.transitions.suspend(workflowId, reason);
  }

  /** Continues a suspended workflow here; WorkflowClaimUnavailableError if another engine holds it. */
  async resume(workflowId: string): Promise<void> {
    await this.lifecycle.assertCanRun();
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
    return this.lifecycle.recoverAll();
  }

  /** One round of background work (for backgroundTasks 'manual'): renewal, reclaim, polls, due timers. */
  async runMaintenance(): Promise<{
    pass: PassReport | null;
    timersFired: number;
    schedulesFired: number;
    purged: number;
    admitted: number;
  }> {
    this.lifecycle.assertOpen();
    return this.background.runMaintenance();
  }

  /**
   * @internal For the testing kit's clock (testing/): fires what is due on workflow time now
   * (timers, delayed starts, deadlines, schedules), admits queued runs and delivers buffered
   * messages, as a background tick does.
   */
  async fireDue(): Promise<void> {
    this.lifecycle.assertOpen();
    return this.background.fireDue();
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
    return this.background.allWaitOnTime();
  }

  /** @internal The earliest timer or schedule fire of this schema after `after` (workflow time, epoch ms), or null. */
  async nextDueAt(after: number): Promise<number | null> {
    return this.background.nextDueAt(after);
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
    return this.lifecycle.dispose();
  }

  /** What health checks need; cheap, no I/O. */
  healthSnapshot(): EngineHealthSnapshot {
    return this.lifecycle.healthSnapshot();
  }

  get isDisposed(): boolean {
    return this.lifecycle.isDisposed;
  }
}
