import { isTransientDatabaseError } from '../../storage/database-errors.js';
import type { AdvanceCommand, AdvanceOutcome, InboxMessage } from '../../storage/types.js';
import type { OperationRecord } from '../../common/types.js';
import { Batcher } from '../../storage/batcher.js';
import type { LoadedWorkflow } from '../../storage/repositories/workflow.repository.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import { NonDeterminismStop } from './context.js';
import { ContinueHost, switchRun } from './continue-as-new.js';
import { pumpInbox, replayDelivery } from './delivery.js';
import { startRun } from './run-start.js';
import { SettledSubscription, SettledWaiters } from './settled-waiters.js';
import { childNotice, Settled } from '../settled.js';
import { ChildHooks, startChildOf } from './child-start.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import { Change, Execution, ExecutionHost, ExecutionRun } from './execution.js';
import { GroupCommitter } from '../group-committer.js';
import { LocalTimers } from '../local-timers.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import { describeError } from '../error-record.js';
import type { WorkflowDefinition } from '../../common/types.js';
import { toStoredJson } from '../validation.js';

export interface RuntimeDependencies {
  store: WorkflowStore;
  committer: GroupCommitter;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  /** Every fence, hold and wake check is the policy's. */
  ownership: OwnershipPolicy;
  children: ChildHooks;
  /** Takes and fires one of this engine's own timers (Transitions.fireOwn): see LocalTimerOptions.fire. */
  fireOwnTimer(workflowId: string, seq: number): Promise<number | null>;
}

/**
 * Runs executions: launch, replay from storage, finish, park/evict, and the single commit
 * path every workflow write goes through (`commitCommand`).
 */
export class Runtime implements ExecutionHost, ContinueHost {
  readonly live = new Map<string, Execution>();
  private readonly parkedLru = new Map<string, Execution>();
  private readonly loading = new Map<string, Promise<void>>();
  private readonly settledWaiters = new SettledWaiters();
  /** Local callers of update() waiting for their request to be applied (by message id). */
  readonly updateWaiters = new Map<string, () => void>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();
  closed = false;
  /** Graceful shutdown under way: running bodies finish and commit, nothing new starts. */
  draining = false;
  private readonly commitErrorsLogged = new WeakSet<Execution>();
  /** Loads of workflows to drive share statements (recovery, a burst of wakes or takeovers). */
  private readonly loader: Batcher<string, LoadedWorkflow | null>;

  readonly store: WorkflowStore;
  readonly committer: GroupCommitter;
  readonly registry: WorkflowRegistry;
  readonly options: ResolvedEngineOptions;
  private readonly ownership: OwnershipPolicy;
  private readonly children: ChildHooks;
  /** Its runs' timers, each armed to its due time here (local-timers.ts). */
  readonly timers: LocalTimers;

  /** A workflow ended by an external command (cancel, timeout): apply the parent-close policy. */
  terminated(workflowId: string): void {
    this.children.terminated(workflowId);
  }

  constructor(deps: RuntimeDependencies) {
    ({ store: this.store, committer: this.committer, registry: this.registry, options: this.options } = deps);
    this.ownership = deps.ownership;
    this.children = deps.children;
    this.timers = new LocalTimers({
      fire: (id, seq) => (this.draining ? Promise.resolve(null) : deps.fireOwnTimer(id, seq)),
      enabled: this.options.backgroundTasks === 'auto',
      onError: (err) => this.logger.warn(`A local timer failed to fire (the poll fires it): ${(err as Error).message}`),
    });
    this.loader = new Batcher(
      (ids) => this.store.workflows.loadMany(ids),
      (id) => id,
      LOAD_BATCH,
    );
  }

  get maxPayloadBytes(): number {
    return this.options.maxPayloadBytes;
  }
  get logger() {
    return this.options.logger;
  }

  /** The one commit path: every workflow write gets its ownership fence here. */
  async commitCommand(command: AdvanceCommand, runEpoch?: string): Promise<AdvanceOutcome> {
    const decorated = this.ownership.fence.fenceCommand(command, runEpoch);
    const outcome = await this.committer.submit(decorated);
    this.ownership.fence.afterCommit(decorated, outcome);
    return outcome;
  }

  /**
   * May a step body (or a child start) begin now? Not while shutting down: the run stays as
   * recorded, `running`, for another engine or the next start (docs/concepts.md).
   */
  mayRun(exec: Execution): boolean {
    if (this.draining || this.closed) return false;
    return !this.ownership.fence.stopIfLapsed(exec.workflowId);
  }

  onCommitError(exec: Execution, err: unknown): boolean {
    const id = exec.workflowId;
    if (isTransientDatabaseError(err)) {
      if (!this.closed && this.live.get(id) === exec && this.ownership.fence.holds(id)) {
        if (!this.commitErrorsLogged.has(exec)) {
          this.commitErrorsLogged.add(exec);
          this.logger.warn(`Commit for workflow "${id}" failed (${(err as Error)?.message}); sending it again.`);
        }
        return true;
      }
      exec.stop();
      this.onStale(exec, 'error', err);
      return false;
    }
    // The database refuses this write for good (a bug or an unbounded value): sending it again,
    // or replaying into it, would loop. Suspend with the reason for an operator.
    exec.stop();
    this.forget(exec);
    this.logger.error(`Commit for workflow "${id}" was refused by the database (${(err as Error)?.message}); suspending it.`);
    const error = { name: 'WorkflowCommitRefused', message: (err as Error)?.message ?? String(err) };
    void this.commitCommand(
      { workflowId: id, expectedVersion: exec.version, status: 'suspended', error: { value: error } },
      exec.epoch,
    ).catch((e) => this.logger.warn(`Suspending "${id}" failed: ${(e as Error).message}`));
    return false;
  }

  /** Graceful shutdown: no new body starts; waits (until `until`) for running ones and their commits. */
  async drain(until: number): Promise<void> {
    this.draining = true;
    const busy = () => [...this.live.values()].some((e) => e.inflightSteps > 0 || e.hasPendingCommits);
    while (busy() && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  }

  /** A run's own writes are fenced with the epoch it was launched under. */
  commit(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome> {
    return exec.trace ? exec.trace.commit(command, (c) => this.commitCommand(c, exec.epoch)) : this.commitCommand(command, exec.epoch);
  }

  /**
   * Runs (or replays) an execution: instance, replay driver, then run(). `atStart`: a start's
   * messages (signal-with-start, what came while it was queued) are delivered before run(); the
   * others, and all of a continued run's, wait for its first wait (docs/messages.md).
   */
  launch(def: WorkflowDefinition, exec: Execution, atStart = false): Promise<unknown> {
    if (!exec.readOnly) {
      exec.epoch = this.ownership.fence.epochOf(exec.workflowId);
      this.live.set(exec.workflowId, exec);
    }
    const result = startRun(def, exec, atStart && !exec.readOnly ? () => this.pump(exec) : undefined);
    void result.then(
      (output) => this.finish(exec, { output }),
      (error) => this.finish(exec, { error }),
    );
    exec.replayRun = (exec.replay?.run() ?? Promise.resolve()).then(() => this.pump(exec));
    return result;
  }

  /**
   * Query on a workflow not live here: replay its history into a fresh instance, running
   * nothing live and writing nothing, then hand the instance to the query handler.
   */
  async replayForQuery(loaded: LoadedWorkflow, timeoutMs: number): Promise<object> {
    const exec = this.executionFrom(loaded);
    exec.readOnly = true;
    void this.launch(exec.definition, exec).catch(() => undefined);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`replay did not finish within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      await Promise.race([exec.replayRun, timeout]);
      await new Promise((r) => setImmediate(r));
      if (exec.readOnlyFailure) throw exec.readOnlyFailure;
      return exec.instance as object;
    } finally {
      clearTimeout(timer);
      exec.stop(false);
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
        if (exec.state !== 'active' || this.live.get(exec.workflowId) !== exec) return;
        this.retryLater(async () => this.wakeForMessage(exec, undefined, Math.min(retryMs * 2, 5_000)), retryMs);
      });
  }

  /** Starts a brand-new run that has no history; `inbox`: messages it sees before run() begins. */
  launchNew(run: ExecutionRun, inbox: InboxMessage[] = []): void {
    const exec = new Execution(this, run);
    exec.addInbox(inbox);
    void this.launch(run.definition, exec, true);
  }

  /** Delivers buffered messages; a handler or predicate that throws fails the workflow. */
  pump(exec: Execution): void {
    try {
      pumpInbox(exec, (messageId) => this.onUpdateApplied(messageId));
    } catch (error) {
      void this.finish(exec, { error });
    }
  }

  applyDelivery(exec: Execution, rec: OperationRecord): void {
    try {
      replayDelivery(exec, rec);
    } catch (error) {
      void this.finish(exec, { error });
    }
  }

  /** ctx.startChild's start (child-start.ts). */
  startChild(exec: Execution, seq: number, type: string, input: unknown, opts: { workflowId?: string }): Promise<string> {
    return startChildOf(this.children, (e, err) => this.onStale(e, 'error', err), exec, seq, type, input, opts);
  }

  /**
   * Replays a running workflow from storage and drives it on; coalesces concurrent calls. A timer
   * that fired brings its seq and the row's fence epoch as the timer was taken.
   */
  drive(workflowId: string, firedSleepSeq?: number, fenceEpoch?: string | null): Promise<void> {
    const live = this.live.get(workflowId);
    if (live) return firedSleepSeq === undefined ? Promise.resolve() : this.wakeLive(live, firedSleepSeq, fenceEpoch);
    const inFlight = this.loading.get(workflowId);
    // Joining a load: a timer fired meanwhile still has to reach the run it brings up.
    if (inFlight) return firedSleepSeq === undefined ? inFlight : inFlight.then(() => this.fireLoaded(workflowId, firedSleepSeq));
    const p = this.loadAndLaunch(workflowId, firedSleepSeq).finally(() => this.loading.delete(workflowId));
    this.loading.set(workflowId, p);
    return p;
  }

  private fireLoaded(workflowId: string, seq: number): void {
    const exec = this.live.get(workflowId);
    if (!exec) return;
    exec.firedTimers.add(seq); // a wait not reached yet in replay resolves as fired
    exec.fireTimer(seq);
  }

  /** Wake ownership check before a timer wakes a parked run. */
  private async wakeLive(exec: Execution, seq: number, fenceEpoch?: string | null): Promise<void> {
    if (!(await this.ownership.fence.confirmWake(exec.workflowId, exec.epoch, 'timer', fenceEpoch))) return;
    exec.fireTimer(seq);
  }

  private async loadAndLaunch(workflowId: string, firedSleepSeq?: number): Promise<void> {
    if (this.closed || this.draining || !this.ownership.fence.holds(workflowId)) return;
    const loaded = await this.loader.submit(workflowId);
    if (!loaded || loaded.row.status !== 'running') return this.ownership.claims.releaseInBackground(workflowId);
    if (this.live.has(workflowId) || this.closed || this.draining || !this.ownership.fence.holds(workflowId)) return;
    if (!this.ownership.fence.confirmLoaded(workflowId, loaded.fenceEpoch)) return;
    if (!this.registry.has(loaded.row.type)) {
      // Let go of its claim, so an engine that runs this type can take it.
      this.logger.warn(
        `Workflow "${workflowId}" has type "${loaded.row.type}", which this engine has not registered; left for another engine.`,
      );
      return this.ownership.claims.releaseInBackground(workflowId);
    }
    const exec = this.executionFrom(loaded);
    if (firedSleepSeq !== undefined) exec.firedTimers.add(firedSleepSeq);
    // A first run not begun yet keeps its start's messages before run(); a later run may be a
    // continued one, whose messages were carried over and wait for its first wait.
    void this.launch(exec.definition, exec, exec.runNumber === 1);
  }

  executionFrom(l: LoadedWorkflow): Execution {
    const def = this.registry.get(l.row.type);
    const history = new Map(l.history.map((op) => [op.seq, op]));
    const timers = new Map(l.timers.filter((t) => t.seq >= 0).map((t) => [t.seq, t.fireAt]));
    const exec = new Execution(this, {
      workflowId: l.row.id,
      definition: def,
      input: l.row.input,
      runNumber: l.row.runNumber,
      version: l.row.version,
      parentId: l.row.parentId,
      history,
      timers,
      loadedAtDbNow: l.dbNow,
    });
    exec.addInbox(l.inbox);
    return Object.assign(exec, { traceContext: l.traceContext }); // loaded: its span links to the stored context
  }

  private async finish(exec: Execution, outcome: { output: unknown } | { error: unknown }): Promise<void> {
    if (exec.state !== 'active' || exec.readOnly) return;
    if ('error' in outcome && outcome.error instanceof NonDeterminismStop) return;
    const early = exec.replay?.endedEarly('run() returned first');
    if (early) return this.onNonDeterminism(exec, early);
    let change: Change;
    const clearTimers = exec.mayHaveStoredTimers;
    if ('output' in outcome) {
      try {
        const output = toStoredJson(outcome.output, 'Workflow output', this.maxPayloadBytes);
        change = { status: 'completed', output: { value: output }, completed: true, clearTimers };
      } catch (err) {
        change = { status: 'failed', error: { value: describeError(err) }, completed: true, clearTimers };
      }
    } else {
      change = { status: 'failed', error: { value: describeError(outcome.error) }, completed: true, clearTimers };
    }
    const settled = { status: change.status!, output: change.output?.value ?? null, error: change.error?.value ?? null };
    if (exec.parentId) change.messages = [childNotice(exec.parentId, exec.workflowId, settled)];
    exec.state = 'finished';
    await exec.commit(change, true);
    this.forget(exec);
    this.options.metrics.workflowFinished?.(exec.definition.name, change.status!);
    this.settle(exec.workflowId, settled);
    this.closeChildren(exec);
  }

  /**
   * The parent-close policy for this run's own children only: after a continue-as-new the next
   * run of the same id is already starting its own.
   */
  private closeChildren(exec: Execution): void {
    exec.childrenClosed = true;
    this.children.terminated(exec.workflowId, exec.childIds());
  }

  continueAsNew(exec: Execution, input: unknown): void {
    if (!exec.readOnly) switchRun(this, exec, input); // a query's replay just ends there
  }

  runContinued(exec: Execution): void {
    this.options.metrics.workflowContinued?.(exec.definition.name);
    this.closeChildren(exec);
  }

  onNonDeterminism(exec: Execution, err: Error): void {
    if (exec.state !== 'active') return;
    if (exec.readOnly) {
      exec.stop();
      exec.readOnlyFailure = err;
      return;
    }
    this.logger.error(err.message);
    exec.state = 'finished';
    const error = { ...describeError(err), ...(err as object) };
    void exec.commit({ status: 'suspended', error: { value: error } }, true).then(() => {
      exec.stop();
      this.forget(exec);
    });
  }

  onStale(exec: Execution, reason: 'version' | 'fence' | 'error', err?: unknown): void {
    this.forget(exec);
    if (reason === 'error')
      this.logger.warn(`Commit for workflow "${exec.workflowId}" failed (${(err as Error)?.message}); retrying from storage.`);
    if (reason === 'fence') return; // ownership moved: the new owner drives it
    // Someone else advanced it (cancel, suspend, timeout) or the database hiccuped: re-read and go on.
    this.redrive(exec.workflowId, reason === 'error' ? 500 : 10);
  }

  onParked(exec: Execution): void {
    if (exec.readOnly) return;
    this.parkedLru.delete(exec.workflowId);
    this.parkedLru.set(exec.workflowId, exec);
    while (this.parkedLru.size > this.options.maxCachedWorkflows) {
      const [oldest] = this.parkedLru.values();
      this.parkedLru.delete(oldest.workflowId);
      if (!oldest.parked) continue;
      oldest.stop(false);
      this.live.delete(oldest.workflowId);
    }
    this.options.metrics.parked?.(this.parkedLru.size);
  }

  rebuild(exec: Execution, recorded: Promise<void>): void {
    // 'finished' ends every wait and new write of this instance; the queued record still commits.
    exec.state = 'finished';
    void recorded.then(() => {
      exec.stop(false);
      this.forget(exec);
      this.redrive(exec.workflowId, 1);
    });
  }

  /** Removes a run from memory (it stays in storage). */
  forget(exec: Execution): void {
    if (this.live.get(exec.workflowId) === exec) this.live.delete(exec.workflowId);
    if (this.parkedLru.delete(exec.workflowId)) this.options.metrics.parked?.(this.parkedLru.size);
  }

  stepFinished(seconds: number): void {
    this.options.metrics.stepDuration?.(seconds);
  }

  /** Stops every live run (the engine lost the global lease). */
  halt(): void {
    for (const exec of [...this.live.values()]) {
      exec.stop(true);
      this.forget(exec);
    }
  }

  /** Stops the live run of a workflow an external transition just ended or suspended. */
  stopLive(workflowId: string): void {
    const exec = this.live.get(workflowId);
    if (!exec) return;
    exec.stop(true);
    this.forget(exec);
  }

  settle(workflowId: string, s: Settled): void {
    this.settledWaiters.settle(workflowId, s);
  }

  /** See SettledWaiters.subscribe. */
  subscribeSettled(workflowId: string): SettledSubscription {
    return this.settledWaiters.subscribe(workflowId);
  }

  private onUpdateApplied(messageId: string): void {
    const w = this.updateWaiters.get(messageId);
    if (w) {
      this.updateWaiters.delete(messageId);
      w();
    }
  }

  /**
   * Drives a workflow again after a failed commit; while the database is away every attempt
   * fails, so it keeps trying with backoff (up to 10 s) as long as this engine may drive it.
   * Jittered: after an outage hundreds of runs would otherwise replay in the same instant and
   * starve the event loop (and with it the renewal loop).
   */
  private redrive(workflowId: string, ms: number): void {
    this.retryLater(
      async () => {
        try {
          await this.drive(workflowId);
        } catch (err) {
          if (!this.closed && this.ownership.fence.holds(workflowId)) this.redrive(workflowId, Math.min(ms * 2, 10_000));
          throw err;
        }
      },
      ms * (0.5 + Math.random()),
    );
  }

  retryLater(fn: () => Promise<unknown>, ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.retryTimers.delete(t);
      fn().catch((err) => this.logger.warn(`Retry failed: ${(err as Error).message}`));
    }, ms);
    this.retryTimers.add(t);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.draining = true;
    this.timers.close();
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    await Promise.allSettled([...this.loading.values()]);
    for (const exec of [...this.live.values()]) {
      exec.stop(true);
      this.forget(exec);
    }
    await this.committer.idle();
  }
}

/** Workflows per load statement: their histories come back as one result. */
const LOAD_BATCH = 64;
