import { detached } from '../../common/detached.js';
import type { AdvanceCommand, AdvanceOutcome, InboxMessage } from '../../storage/types.js';
import type { Queryable } from '../../storage/sql-client.js';
import { StreamClosedError, WorkflowNotRunningError } from '../../common/errors.js';
import type { OperationRecord, WorkflowDefinition } from '../../common/types.js';
import { Batcher } from '../../storage/batcher.js';
import type { LoadedWorkflow } from '../../storage/repositories/workflow.repository.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { GroupCommitter } from '../group-committer.js';
import { LocalTimers } from '../local-timers.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import type { ContinueHost } from './continue-as-new.js';
import { pumpInbox, replayDelivery } from './delivery.js';
import { SettledSubscription, SettledWaiters } from './settled-waiters.js';
import type { Settled } from '../settled.js';
import { ChildHooks, startChildOf } from './child-start.js';
import { CommitPath, type QueueHandoff } from './commit-path.js';
import type { Execution, ExecutionHost, ExecutionRun, ExternalHooks } from './execution.js';
import { RunLauncher } from './launcher.js';
import { LiveRuns } from './live-runs.js';
import { Retries } from './retries.js';
import { HeartbeatWriter } from './heartbeat-writer.js';
import { ExternalCompletions } from './external-completions.js';
import { StepTransactions } from './step-transactions.js';
import type { AmbientTransactions } from '../ambient/ambient-transactions.js';
import type { QueueSlots } from '../queues/slots.js';

export interface RuntimeDependencies {
  store: WorkflowStore;
  committer: GroupCommitter;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  /** Every fence, hold and wake check is the policy's. */
  ownership: OwnershipPolicy;
  children: ChildHooks;
  /** Libraries' ambient transactions a transactional body joins. */
  ambient: AmbientTransactions;
  /** ctx.startWorkflow, ctx.cancelWorkflow and signalWorkflow's check: the engine's own calls. */
  external: ExternalHooks;
  /** Queue slots given back while parked and taken again on a wake (releaseWhileWaiting). */
  slots: QueueSlots;
  /** Takes and fires one of this engine's own timers (Transitions.fireOwn): see LocalTimerOptions.fire. */
  fireOwnTimer(workflowId: string, seq: number): Promise<number | null>;
  /** A queued run's end hands its slot to the queue's next workflow (engine/queues/admission.ts). */
  handoff?: QueueHandoff;
}

/**
 * Drives this engine's runs: loads and wakes them, delivers their messages, and answers the
 * calls an Execution makes of its host by handing each to the part that owns it (the live-run
 * registry, the commit path, the launcher). Its own state: closed/draining, loads in flight,
 * and the local waiters for results and updates.
 */
export class Runtime implements ExecutionHost, ContinueHost {
  private readonly runs: LiveRuns;
  private readonly commits: CommitPath;
  private readonly launcher: RunLauncher;
  private readonly retries: Retries;
  private readonly loading = new Map<string, Promise<void>>();
  private readonly settledWaiters = new SettledWaiters();
  /** Local callers of update() waiting for their request to be applied (by message id). */
  private readonly updateWaiters = new Map<string, () => void>();
  private _closed = false;
  /** Graceful shutdown under way: running bodies finish and commit, nothing new starts. */
  private draining = false;
  /** Loads of workflows to drive share statements (recovery, a burst of wakes or takeovers). */
  private readonly loader: Batcher<string, LoadedWorkflow | null>;
  /** Workflows a delayed start's fire holds the claim of (firing()), with whether a wake came meanwhile. */
  private readonly fires = new Map<string, { woken: boolean }>();

  readonly store: WorkflowStore;
  readonly committer: GroupCommitter;
  readonly registry: WorkflowRegistry;
  readonly options: ResolvedEngineOptions;
  private readonly ownership: OwnershipPolicy;
  private readonly children: ChildHooks;
  private readonly slots: QueueSlots;
  /** @internal ctx.startWorkflow / cancelWorkflow / signalWorkflow reach other workflows through these. */
  readonly external: ExternalHooks;
  /** Its runs' timers, each armed to its due time here (local-timers.ts). */
  readonly timers: LocalTimers;
  /** Transactional steps' connections and commits (step-transactions.ts). */
  readonly transactions: StepTransactions;
  /** Steps' heartbeats, written in batches (heartbeat-writer.ts). */
  readonly heartbeats: HeartbeatWriter;
  /** External steps' completions (external-completions.ts). */
  readonly completions: ExternalCompletions;

  constructor(deps: RuntimeDependencies) {
    this.store = deps.store;
    this.committer = deps.committer;
    this.registry = deps.registry;
    this.options = deps.options;
    this.ownership = deps.ownership;
    this.children = deps.children;
    this.slots = deps.slots;
    this.external = deps.external;
    this.timers = new LocalTimers({
      fire: (id, seq) => (this.draining ? Promise.resolve(null) : deps.fireOwnTimer(id, seq)),
      enabled: this.options.backgroundTasks === 'auto',
      clock: this.options.clock,
      onError: (err) => this.logger.warn(`A local timer failed to fire (the poll fires it): ${(err as Error).message}`),
    });
    this.loader = new Batcher(
      (ids) => this.store.workflows.loadMany(ids),
      (id) => id,
      { maxBatch: LOAD_BATCH },
    );
    // Two connections stay with the engine's own statements, whatever the bodies hold.
    this.transactions = new StepTransactions(this.store, this.ownership, deps.ambient, () => this.store.sql.poolMax - 2);
    this.runs = new LiveRuns(this.options.maxCachedWorkflows, (n) => this.options.metrics.parked?.(n));
    this.retries = new Retries(this.options.logger);
    this.heartbeats = new HeartbeatWriter(
      this.store.stepProgress,
      this.options.logger,
      this.options.heartbeatFlushMs,
      this.ownership.fence,
    );
    this.completions = new ExternalCompletions(this.store.stepProgress, this.options.logger);
    this.commits = new CommitPath({
      committer: this.committer,
      ownership: this.ownership,
      runs: this.runs,
      retries: this.retries,
      logger: this.options.logger,
      isClosed: () => this._closed,
      drive: (id) => this.drive(id),
      advanceOn: (via, command) => this.store.workflows.advanceOn(via, command),
      handoff: deps.handoff,
    });
    this.launcher = new RunLauncher({
      host: this,
      runs: this.runs,
      commits: this.commits,
      registry: this.registry,
      options: this.options,
      ownership: this.ownership,
      children: this.children,
      pump: (exec) => this.pump(exec),
      settle: (id, s) => this.settle(id, s),
    });
  }

  get maxPayloadBytes(): number {
    return this.options.maxPayloadBytes;
  }
  get logger() {
    return this.options.logger;
  }
  get closed(): boolean {
    return this._closed;
  }
  /** Graceful shutdown began: nothing new is started or admitted. */
  get isDraining(): boolean {
    return this.draining;
  }

  // --- the live runs, for the engine's other parts -------------------------------------------------

  /** The run of a workflow live here, if any. */
  liveRun(workflowId: string): Execution | undefined {
    return this.runs.get(workflowId);
  }

  isLive(workflowId: string): boolean {
    return this.runs.has(workflowId);
  }

  get liveCount(): number {
    return this.runs.size;
  }

  /** Stops every live run (the engine lost the global lease). */
  halt(): void {
    this.runs.stopAll();
  }

  /** Stops the live run of a workflow an external transition just ended or suspended. */
  stopLive(workflowId: string): void {
    this.runs.stop(workflowId);
  }

  /** Removes a run from memory (it stays in storage). */
  forget(exec: Execution): void {
    this.runs.forget(exec);
  }

  // --- writes ----------------------------------------------------------------------------------------

  /** The one commit path: every workflow write gets its ownership fence here (commit-path.ts). */
  commitCommand(command: AdvanceCommand, runEpoch?: string): Promise<AdvanceOutcome> {
    return this.commits.commitCommand(command, runEpoch);
  }

  /** A command in a caller's transaction (a transactional cancel): fenced, written on its connection. */
  commitCommandOn(via: Queryable, command: AdvanceCommand, onCommit: (fn: () => void) => void): Promise<AdvanceOutcome> {
    return this.commits.commitCommandOn(via, command, onCommit);
  }

  commit(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome> {
    return this.commits.commit(exec, command);
  }

  onCommitError(exec: Execution, err: unknown): boolean {
    return this.commits.onCommitError(exec, err);
  }

  pauseBeforeRetry(ms: number): Promise<void> {
    return this.commits.pauseBeforeRetry(ms);
  }

  onStale(exec: Execution, reason: 'version' | 'fence' | 'error', err?: unknown): void {
    this.commits.onStale(exec, reason, err);
  }

  // --- launch and end (launcher.ts) ------------------------------------------------------------------

  launch(def: WorkflowDefinition, exec: Execution, atStart = false): Promise<unknown> {
    return this.launcher.launch(def, exec, atStart);
  }

  /** Starts a brand-new run that has no history; `inbox`: messages it sees before run() begins. */
  launchNew(run: ExecutionRun, inbox: InboxMessage[] = []): void {
    this.launcher.launchNew(run, inbox);
  }

  replayForQuery(loaded: LoadedWorkflow, timeoutMs: number): Promise<object> {
    return this.launcher.replayForQuery(loaded, timeoutMs);
  }

  continueAsNew(exec: Execution, input: unknown): void {
    this.launcher.continueAsNew(exec, input);
  }

  runContinued(exec: Execution): Promise<void> {
    return this.launcher.runContinued(exec);
  }

  onNonDeterminism(exec: Execution, err: Error): void {
    this.launcher.onNonDeterminism(exec, err);
  }

  rebuild(exec: Execution, recorded: Promise<void>): void {
    this.launcher.rebuild(exec, recorded);
  }

  onParked(exec: Execution): void {
    if (exec.readOnly) return;
    this.runs.parked(exec);
    this.slots.parked(exec);
  }

  wantSlot(exec: Execution): void {
    this.slots.want(exec);
  }

  /**
   * May a step body (or a child start) begin now? Not while shutting down: the run stays as
   * recorded, `running`, for another engine or the next start (docs/concepts.md).
   */
  mayRun(exec: Execution): boolean {
    if (this.draining || this._closed) return false;
    return !this.ownership.fence.stopIfLapsed(exec.workflowId);
  }

  stepFinished(seconds: number): void {
    this.options.metrics.stepDuration?.(seconds);
  }

  /** ctx.writeStream from a step body (streams.ts reads what it appends). */
  async appendStream(workflowId: string, key: string, value: unknown, attempt: number): Promise<void> {
    const out = await this.store.streams.append(workflowId, key, value, attempt);
    if (out === 'closed') throw new StreamClosedError(workflowId, key);
    if (out === 'not-live') throw new WorkflowNotRunningError(workflowId, 'not running');
  }

  /** ctx.startChild's start (child-start.ts). */
  startChild(exec: Execution, seq: number, type: string, input: unknown, opts: { workflowId?: string }): Promise<string> {
    return startChildOf(this.children, (e, err) => this.onStale(e, 'error', err), exec, seq, type, input, opts);
  }

  /** A workflow ended by an external command (cancel, timeout): apply the parent-close policy. */
  terminated(workflowId: string): void {
    void this.children.terminated(workflowId);
  }

  // --- messages --------------------------------------------------------------------------------------

  /** Delivers buffered messages; a handler or predicate that throws fails the workflow. */
  pump(exec: Execution): void {
    try {
      pumpInbox(exec, (messageId) => this.onUpdateApplied(messageId));
    } catch (error) {
      void this.launcher.finish(exec, { error });
    }
  }

  applyDelivery(exec: Execution, rec: OperationRecord): void {
    try {
      replayDelivery(exec, rec, (messageId) => this.onUpdateApplied(messageId));
    } catch (error) {
      void this.launcher.finish(exec, { error });
    }
  }

  /**
   * A message for a live run: a parked one passes the wake ownership check first, against the
   * fence epoch read with the messages when there is one (else it reads the claim).
   */
  wakeForMessage(exec: Execution, fenceEpoch?: string | null, retryMs = 250): void {
    if (!exec.parked) return this.pump(exec);
    void this.ownership.fence
      .confirmWake(exec.workflowId, exec.epoch, 'message', fenceEpoch)
      .then((ok) => ok && this.pump(exec))
      // The database is away: the message is already in the inbox, so no poll will bring it
      // again. Check again with backoff for as long as this run is the live one.
      .catch(() => {
        if (exec.state !== 'active' || !this.runs.isCurrent(exec)) return;
        this.retries.later(async () => this.wakeForMessage(exec, undefined, Math.min(retryMs * 2, 5_000)), retryMs);
      });
  }

  /** A local update() caller waits for its request to be applied here: `wake` is called then. */
  awaitUpdate(messageId: string, wake: () => void): void {
    this.updateWaiters.set(messageId, wake);
  }

  stopAwaitingUpdate(messageId: string): void {
    this.updateWaiters.delete(messageId);
  }

  private onUpdateApplied(messageId: string): void {
    const w = this.updateWaiters.get(messageId);
    if (w) {
      this.updateWaiters.delete(messageId);
      w();
    }
  }

  // --- results ---------------------------------------------------------------------------------------

  settle(workflowId: string, s: Settled): void {
    this.settledWaiters.settle(workflowId, s);
  }

  /** See SettledWaiters.subscribe. */
  subscribeSettled(workflowId: string): SettledSubscription {
    return this.settledWaiters.subscribe(workflowId);
  }

  // --- loading ---------------------------------------------------------------------------------------

  /**
   * Replays a running workflow from storage and drives it on; coalesces concurrent calls. A timer
   * that fired brings its seq and the row's fence epoch as the timer was taken.
   */
  drive(workflowId: string, firedSleepSeq?: number, fenceEpoch?: string | null): Promise<void> {
    const live = this.runs.get(workflowId);
    if (live) return firedSleepSeq === undefined ? Promise.resolve() : this.wakeLive(live, firedSleepSeq, fenceEpoch);
    // A wake waits for a delayed start's fire; a timer's does not (a pending workflow has none, and
    // a running one the fire found keeps its timer's seq, which a deferred wake would drop).
    const fire = firedSleepSeq === undefined ? this.fires.get(workflowId) : undefined;
    if (fire) {
      fire.woken = true; // driven once the fire is done (firing())
      return Promise.resolve();
    }
    const inFlight = this.loading.get(workflowId);
    // Joining a load: a timer fired meanwhile still has to reach the run it brings up.
    if (inFlight) return firedSleepSeq === undefined ? inFlight : inFlight.then(() => this.fireLoaded(workflowId, firedSleepSeq));
    // Loaded and launched in no caller's context (a run that woke it, a request): common/detached.ts.
    const p = detached(() => this.loadAndLaunch(workflowId, firedSleepSeq))
      .then(
        () => this.commits.endLoadRetries(workflowId),
        (err: unknown) => this.loadFailed(workflowId, err),
      )
      .finally(() => this.loading.delete(workflowId));
    this.loading.set(workflowId, p);
    return p;
  }

  /**
   * A load that failed (the database away, a connection cut) must not strand a workflow whose
   * claim this engine keeps renewing: no other engine would take it over, and nothing here would
   * run it. It is loaded again with backoff for as long as this engine holds it; the caller (a
   * resume, a recovery, a wake) is not failed for it, since what it committed stands.
   */
  private loadFailed(workflowId: string, err: unknown): void {
    if (this._closed || this.draining || !this.ownership.fence.holds(workflowId)) {
      this.commits.endLoadRetries(workflowId);
      throw err;
    }
    this.commits.retryLoad(workflowId, err);
  }

  private fireLoaded(workflowId: string, seq: number): void {
    const exec = this.runs.get(workflowId);
    if (!exec) return;
    exec.markFired(seq); // a wait not reached yet in replay resolves as fired
    exec.fireTimer(seq);
  }

  /**
   * Wake ownership check before a timer wakes a parked run. A run still replaying may not have
   * reached the timer's wait yet (an update handler's sleep, after a takeover): the fire is kept,
   * as fireLoaded keeps it, and the wait resolves as fired when the code gets there. Dropped, the
   * taken row was pushed ahead and fired again and again into no wait (local-timers.spec.ts).
   */
  private async wakeLive(exec: Execution, seq: number, fenceEpoch?: string | null): Promise<void> {
    if (!(await this.ownership.fence.confirmWake(exec.workflowId, exec.epoch, 'timer', fenceEpoch))) return;
    if (!exec.fireTimer(seq)) exec.markFired(seq);
  }

  private async loadAndLaunch(workflowId: string, firedSleepSeq?: number): Promise<void> {
    if (this._closed || this.draining || !this.ownership.fence.holds(workflowId)) return;
    const loaded = await this.loader.submit(workflowId);
    if (!loaded || loaded.row.status !== 'running') return this.ownership.claims.releaseInBackground(workflowId);
    if (this.runs.has(workflowId) || this._closed || this.draining || !this.ownership.fence.holds(workflowId)) return;
    if (!this.ownership.fence.confirmLoaded(workflowId, loaded.fenceEpoch)) return;
    if (!this.registry.has(loaded.row.type)) {
      // Let go of its claim, so an engine that runs this type can take it.
      this.logger.warn(
        `Workflow "${workflowId}" has type "${loaded.row.type}", which this engine has not registered; left for another engine.`,
      );
      return this.ownership.claims.releaseInBackground(workflowId);
    }
    const exec = this.launcher.executionFrom(loaded);
    if (firedSleepSeq !== undefined) exec.markFired(firedSleepSeq);
    // A first run not begun yet keeps its start's messages before run(); a later run may be a
    // continued one, whose messages were carried over and wait for its first wait.
    void this.launcher.launch(exec.definition, exec, exec.runNumber === 1);
  }

  /**
   * A delayed start's fire, from its claim to its run's launch or the claim's release. A wake
   * meanwhile (a message's notice for the workflow this engine now holds) loaded it as pending and
   * let the claim go under the fire, whose commit was then refused; or, loading it just after the
   * fire's commit, launched a second run beside the fire's. It waits for the fire instead, and is
   * driven after it (a run the fire launched is live by then, one it left held is loaded).
   */
  async firing<T>(workflowId: string, fire: () => Promise<T>): Promise<T> {
    const state = { woken: false };
    this.fires.set(workflowId, state);
    try {
      return await fire();
    } finally {
      if (this.fires.get(workflowId) === state) this.fires.delete(workflowId);
      if (state.woken) this.wakeAfterFire(workflowId);
    }
  }

  /** A wake that waited for a fire: a run the fire launched takes the messages that came meanwhile; one it left held is loaded. */
  private wakeAfterFire(workflowId: string): void {
    const fail = (err: unknown) => this.logger.warn(`Waking "${workflowId}" after its start fired failed: ${(err as Error).message}`);
    if (this.runs.has(workflowId)) this.deliverInbox(workflowId).catch(fail);
    else if (this.ownership.fence.holds(workflowId)) this.drive(workflowId).catch(fail);
  }

  /**
   * A message arrived for a live run: its pending messages are read and those it has not seen
   * taken in (one that committed after a higher id was read, ids being drawn before commit, must
   * still arrive), and the run woken.
   */
  async deliverInbox(workflowId: string): Promise<void> {
    const { messages, fenceEpoch } = await this.store.messages.inbox(workflowId);
    // The run that is live now: after a continueAsNew it is the next run, and the messages (still
    // pending) are its own.
    const now = this.runs.get(workflowId);
    if (messages.length === 0 || !now) return;
    now.inbox.add(messages);
    this.wakeForMessage(now, fenceEpoch);
  }

  /** @internal Nothing here runs but waits: no load, no timer fire, no busy run (the testing kit's clock). */
  get isQuiet(): boolean {
    return this.loading.size === 0 && this.timers.inFlight === 0 && this.runs.allWaiting();
  }

  // --- shutdown --------------------------------------------------------------------------------------

  /** Graceful shutdown: no new body starts; waits (until `until`) for running ones and their commits. */
  async drain(until: number): Promise<void> {
    this.beginDrain();
    while (this.runs.anyBusy() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }

  /** From now on nothing new starts here (the first step of a graceful shutdown). */
  beginDrain(): void {
    this.draining = true;
    this.commits.hurry();
  }

  async close(): Promise<void> {
    this._closed = true;
    this.draining = true;
    this.commits.hurry();
    this.timers.close();
    // A fire that took its row before the shutdown began puts it back if it wakes nothing here.
    await this.timers.settled(Date.now() + 5_000);
    this.retries.close();
    this.completions.close();
    await Promise.allSettled([...this.loading.values()]);
    this.runs.stopAll();
    // The last heartbeats of the bodies just stopped: the next owner resumes from them.
    await this.heartbeats.close();
    await this.committer.idle();
  }
}

/** Workflows per load statement: their histories come back as one result. */
const LOAD_BATCH = 64;
