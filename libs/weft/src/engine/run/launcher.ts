import type { InboxMessage } from '../../storage/types.js';
import type { LoadedWorkflow } from '../../storage/repositories/workflow.repository.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { WorkflowDefinition } from '../../common/types.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import { attributesBeforeHistory } from '../attributes.js';
import { cancelledRecord, describeError } from '../error-record.js';
import { WorkflowCancelledError } from '../../common/errors.js';
import { toStoredJson } from '../validation.js';
import { NonDeterminismStop } from './context.js';
import { ContinueHost, switchRun } from './continue-as-new.js';
import type { ChildHooks } from './child-start.js';
import type { CommitPath } from './commit-path.js';
import { Change, Execution, ExecutionRun } from './execution.js';
import type { LiveRuns } from './live-runs.js';
import { startRun } from './run-start.js';
import { childNotice, Settled } from '../settled.js';

export interface LauncherDependencies {
  /** The host of the runs it builds (the runtime). */
  host: ContinueHost;
  runs: LiveRuns;
  commits: CommitPath;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  ownership: OwnershipPolicy;
  children: ChildHooks;
  /** Delivers buffered messages (Runtime.pump). */
  pump(exec: Execution): void;
  /** A workflow ended here: wakes its local result() callers. */
  settle(workflowId: string, s: Settled): void;
}

/**
 * A run's launch and its end: the instance and replay driver, run(), and then the one terminal
 * commit of whatever ended it (output, failure, non-determinism, continue-as-new, a rebuild).
 */
export class RunLauncher {
  constructor(private readonly deps: LauncherDependencies) {}

  /**
   * Runs (or replays) an execution: instance, replay driver, then run(). `atStart`: a start's
   * messages (signal-with-start, what came while it was queued) are delivered before run(); the
   * others, and all of a continued run's, wait for its first wait (docs/messages.md).
   */
  launch(def: WorkflowDefinition, exec: Execution, atStart = false): Promise<unknown> {
    const { runs, ownership, pump } = this.deps;
    if (!exec.readOnly) {
      exec.launchedUnder(ownership.fence.epochOf(exec.workflowId));
      runs.add(exec);
    }
    const replay = () => void exec.replayHistory(() => pump(exec));
    // With run hooks, the replay driver starts when run() is called: a hook that awaits before
    // `next` would otherwise leave the driver finding none of the history's calls (non-determinism).
    const hooked = this.deps.options.interceptors?.run !== undefined;
    const result = startRun(def, exec, atStart && !exec.readOnly ? () => pump(exec) : undefined, hooked ? replay : undefined);
    void result.then(
      (output) => this.finish(exec, { output }),
      (error) => this.finish(exec, { error }),
    );
    if (!hooked) replay();
    return result;
  }

  /** Starts a brand-new run that has no history; `inbox`: messages it sees before run() begins. */
  launchNew(run: ExecutionRun, inbox: InboxMessage[] = []): void {
    const exec = new Execution(this.deps.host, run);
    exec.inbox.add(inbox);
    void this.launch(run.definition, exec, true);
  }

  /** An execution of a run read from storage; `readOnly` for a query's replay. */
  executionFrom(l: LoadedWorkflow, readOnly = false): Execution {
    const def = this.deps.registry.get(l.row.type);
    const history = new Map(l.history.map((op) => [op.seq, op]));
    const timers = new Map(l.timers.filter((t) => t.seq >= 0).map((t) => [t.seq, t.fireAt]));
    const exec = new Execution(this.deps.host, {
      workflowId: l.row.id,
      definition: def,
      input: l.row.input,
      runNumber: l.row.runNumber,
      version: l.row.version,
      parentId: l.row.parentId,
      history,
      timers,
      loadedAtDbNow: l.dbNow,
      readOnly,
      traceContext: l.traceContext, // loaded: its span links to the stored context
      attributes: attributesBeforeHistory(l.row.attributes, l.history),
      progress: l.progress.length ? new Map(l.progress.map((p) => [p.seq, p])) : undefined,
      queue: l.row.queue,
      slotReleased: l.slotReleased,
      singleton: l.singleton,
      headers: l.headers, // as stored: a takeover's run and steps see its start's headers
    });
    exec.inbox.add(l.inbox);
    return exec;
  }

  /**
   * Query on a workflow not live here: replay its history into a fresh instance, running
   * nothing live and writing nothing, then hand the instance to the query handler.
   */
  async replayForQuery(loaded: LoadedWorkflow, timeoutMs: number): Promise<object> {
    const exec = this.executionFrom(loaded, true);
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

  /** The code returned or threw: one terminal commit with its outcome (and its parent's notice). */
  async finish(exec: Execution, outcome: { output: unknown } | { error: unknown }): Promise<void> {
    if (exec.state !== 'active' || exec.readOnly) return;
    if ('error' in outcome && outcome.error instanceof NonDeterminismStop) return;
    const early = exec.replay?.endedEarly('run() returned first');
    if (early) return this.onNonDeterminism(exec, early);
    const { options } = this.deps;
    const change = terminalChange(exec, outcome, options.maxPayloadBytes);
    const settled = { status: change.status!, output: change.output?.value ?? null, error: change.error?.value ?? null };
    endNotices(exec, change, settled);
    exec.end();
    await exec.commit(change, true);
    this.deps.runs.forget(exec);
    options.metrics.workflowFinished?.(exec.definition.name, change.status!);
    this.deps.settle(exec.workflowId, settled);
    void this.closeChildren(exec, exec.holdsSingleton);
  }

  /**
   * The parent-close policy for this run's own children only: after a continue-as-new the next
   * run of the same id is already starting its own.
   */
  private closeChildren(exec: Execution, endsSingleton = false): Promise<void> {
    return this.deps.children.terminated(exec.workflowId, exec.closeChildren(), endsSingleton);
  }

  continueAsNew(exec: Execution, input: unknown): void {
    if (!exec.readOnly) switchRun(this.deps.host, exec, input); // a query's replay just ends there
  }

  /** Resolves once the ended run's live children are read (closeChildren): the next run's child starts wait for it. */
  runContinued(exec: Execution): Promise<void> {
    this.deps.options.metrics.workflowContinued?.(exec.definition.name);
    return this.closeChildren(exec);
  }

  /** Replay met a different call than the history holds: suspend the workflow. */
  onNonDeterminism(exec: Execution, err: Error): void {
    if (exec.state !== 'active') return;
    if (exec.readOnly) return exec.failReadOnly(err);
    this.deps.options.logger.error(err.message);
    exec.end();
    const error = { ...describeError(err), ...(err as object) };
    void exec.commit({ status: 'suspended', error: { value: error } }, true).then(() => {
      exec.stop();
      this.deps.runs.forget(exec);
    });
  }

  /** See ExecutionHost.rebuild. */
  rebuild(exec: Execution, recorded: Promise<void>): void {
    // Ended: every wait and new write of this instance ends; the queued record still commits.
    exec.end();
    void recorded.then(() => {
      exec.stop(false);
      this.deps.runs.forget(exec);
      this.deps.commits.redrive(exec.workflowId, 1);
    });
  }
}

/** The terminal change of a run whose code returned or threw (docs/cancellation.md for a cancel let through). */
function terminalChange(exec: Execution, outcome: { output: unknown } | { error: unknown }, maxPayloadBytes: number): Change {
  let change: Change;
  // A cancel request that came too late for the code stored its grace timer beside it.
  const clearTimers = exec.mayHaveStoredTimers || exec.inbox.hasCancel;
  if ('output' in outcome) {
    try {
      const output = toStoredJson(outcome.output, 'Workflow output', maxPayloadBytes);
      change = { status: 'completed', output: { value: output }, completed: true, clearTimers };
    } catch (err) {
      change = { status: 'failed', error: { value: describeError(err) }, completed: true, clearTimers };
    }
  } else if (exec.cancelled && outcome.error instanceof WorkflowCancelledError) {
    // The code let the cancel end it (docs/cancellation.md): caught and returned, it completed above.
    change = { status: 'cancelled', error: { value: cancelledRecord(outcome.error.reason) }, completed: true, clearTimers };
  } else {
    change = { status: 'failed', error: { value: describeError(outcome.error) }, completed: true, clearTimers };
  }
  return change;
}

/** What the end tells others: the parent its child's end, the callers of updates still running. */
function endNotices(exec: Execution, change: Change, settled: Settled): void {
  if (exec.parentId) change.messages = [childNotice(exec.parentId, exec.workflowId, settled)];
  const abandoned = exec.abandonUpdates();
  if (abandoned.length) change.updateResults = abandoned;
}
