import { randomUUID } from 'node:crypto';
import {
  ChildWorkflowFailedError,
  InvalidArgumentError,
  NonDeterminismError,
  OperationInTransactionError,
  OutsideWorkflowError,
  recordedError,
  StepFailedError,
  StreamClosedError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
} from '../../common/errors.js';
import type { Change } from './commit-queue.js';
import { currentStep, insideStepBody } from '../als.js';
import type { StreamWrite } from '../../storage/types.js';
import { Duration, parseDuration } from '../../common/duration.js';
import type { OperationKind } from '../../common/operation-kinds.js';
import { Execution, NEVER, Wait } from './execution.js';
import { resolveRetry } from '../retry.js';
import { mergeAttributes, storedPatch } from '../attributes.js';
import { describeError } from '../error-record.js';
import { runAttempts, type AttemptsOutcome } from './step-runner.js';
import { hookedStep } from '../interceptors.js';
import { StepProgress } from './step-progress.js';
import { completionToken, type ExternalCompletions } from './external-completions.js';
import type { StepProgressKey } from '../../storage/repositories/step-progress.repository.js';
import { runTransactionStep, type TransactionOutcome } from './transaction-step.js';
import { nonCancellableStorage, stepBodyStorage } from '../als.js';
import type { EntityManager } from 'typeorm';
import { ISOLATION_LEVELS } from '../../storage/app-transaction.js';
import type {
  AttributeInput,
  ChildHandle,
  OperationRecord,
  StepArgs,
  StepOptions,
  TransactionOptions,
  WeftLogger,
  WorkflowContext,
} from '../../common/types.js';
import { toStoredJson, validateName, validateWorkflowId } from '../validation.js';
import { TERMINAL_STATUSES, WorkflowStatus } from '../../common/types.js';

/** The `ctx` of one run: every call takes the next sequence number and is recorded or replayed. */
export class WorkflowContextImpl implements WorkflowContext {
  readonly logger: WeftLogger;
  /** The streams this run closed (live or replayed): a later write to one is refused at the call. */
  private readonly closedStreams = new Set<string>();

  /** @internal The engine builds one per run. */
  constructor(private readonly exec: Execution) {
    const prefix = `[${exec.definition.name}:${exec.workflowId}]`;
    const host = exec.host.logger;
    // Quiet while replaying, so a replay does not repeat old log lines.
    const say = (level: 'log' | 'warn' | 'error') => (m: string) => {
      if (!exec.isReplaying && !exec.readOnly) host[level](`${prefix} ${m}`);
    };
    this.logger = { log: say('log'), warn: say('warn'), error: say('error') };
    // Built once per launch, in the launcher's context: the run's workflow span starts here.
    exec.startTrace();
  }

  get workflowId(): string {
    return this.exec.workflowId;
  }

  /** Run number of this workflow id: 1, then +1 per continueAsNew or 'start-new-if-terminal' restart. */
  get runNumber(): number {
    return this.exec.runNumber;
  }

  get attempt(): number {
    return this.exec.runNumber;
  }

  /** Aborted on cancel, timeout, suspension or loss of ownership. */
  get signal(): AbortSignal {
    return this.exec.abort.signal;
  }

  get isReplaying(): boolean {
    return this.exec.isReplaying;
  }

  private active(method: string): void {
    if (this.exec.state === 'finished') throw new OutsideWorkflowError(method);
    if (this.exec.validating) {
      throw new InvalidArgumentError(
        `ctx.${method}`,
        'is not allowed in an update validator: it decides from the state and the arguments alone',
      );
    }
    // A transactional body's one transaction commits with its one record (docs/transactions.md).
    if (stepBodyStorage.getStore()?.manager) throw new OperationInTransactionError(method);
  }

  /** The recorded operation at `seq`, checked against what the code calls now. */
  private replayed(seq: number, kind: OperationKind, name: string): OperationRecord | undefined | 'mismatch' {
    const rec = this.exec.history.get(seq);
    if (!rec) return undefined;
    if (rec.kind !== kind || rec.name !== name) {
      this.exec.host.onNonDeterminism(
        this.exec,
        new NonDeterminismError(this.exec.workflowId, seq, { kind: rec.kind, name: rec.name }, { kind, name }),
      );
      return 'mismatch';
    }
    return rec;
  }

  /** A recorded result, released by the replay driver in live order. */
  private fromHistory(seq: number, rec: OperationRecord): Promise<unknown> {
    const replay = this.exec.replay;
    if (replay && !replay.done) return replay.expect(seq).then(fromRecord);
    return Promise.resolve().then(() => fromRecord(rec));
  }

  /** Common entry: next seq, replay check. Returns the seq, a replayed promise, or NEVER. */
  private begin(kind: OperationKind, name: string): { seq: number; replay?: Promise<unknown>; live: boolean } {
    this.active(kind);
    const exec = this.exec;
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, kind, name);
    if (rec === 'mismatch' || exec.state !== 'active') return { seq, replay: NEVER, live: false };
    if (rec) return { seq, replay: this.fromHistory(seq, rec), live: false };
    return { seq, live: !exec.readOnly };
  }

  /**
   * A call that a cancel ends (docs/cancellation.md): outside ctx.nonCancellable it rejects with
   * WorkflowCancelledError at once when the run is cancelled already (taking no seq, on replay as
   * live), and as soon as the cancel is applied while it is pending.
   */
  private guarded<T>(op: (cancellable: boolean) => Promise<T>): Promise<T> {
    const exec = this.exec;
    if (exec.shieldsUsed && nonCancellableStorage.getStore() === true) return op(false);
    if (exec.cancelled && exec.state === 'active') return Promise.reject(exec.cancelled);
    return exec.cancellable(op(true));
  }

  /** startChild and the calls on other workflows: refused once cancelled (outside ctx.nonCancellable); once begun they finish. */
  private refuseIfCancelled(): void {
    const exec = this.exec;
    if (!exec.cancelled || exec.state !== 'active') return;
    if (exec.shieldsUsed && nonCancellableStorage.getStore() === true) return;
    throw exec.cancelled;
  }

  /**
   * Runs `fn` so that a cancel does not end its calls: its steps, sleeps, waits and children run
   * to their end, within the engine's cancelGracePeriod counted from the cancel.
   */
  nonCancellable<T>(fn: () => T | Promise<T>): Promise<T> {
    this.active('nonCancellable');
    if (typeof fn !== 'function') throw new InvalidArgumentError('ctx.nonCancellable', 'needs a function');
    this.exec.shieldsUsed = true;
    return nonCancellableStorage.run(true, async () => fn());
  }

  step<T>(name: string, fn: (args: StepArgs) => T | Promise<T>, opts: StepOptions = {}): Promise<T> {
    return this.guarded((cancellable) => this.runStep(name, fn, opts, cancellable));
  }

  private async runStep<T>(name: string, fn: (args: StepArgs) => T | Promise<T>, opts: StepOptions, cancellable: boolean): Promise<T> {
    this.active('step');
    validateName('step name', name);
    const parsed = stepOptions(name, opts); // refused before a seq is taken
    const { seq, replay, live } = this.begin('step', name);
    if (replay) return replay as Promise<T>;
    if (!live) return NEVER;
    const exec = this.exec;
    if (cancellable && exec.cancelAhead) return NEVER; // pending at the cancel the replay will apply
    const host = exec.host;
    const progress = new StepProgress(
      exec.workflowId,
      exec.runNumber,
      seq,
      name,
      host.heartbeats,
      host.maxPayloadBytes,
      exec.progressOf(seq),
    );
    exec.stepBegins();
    try {
      // A body's side effects may only follow what earlier calls recorded.
      await exec.durable();
      if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
      const startedAt = new Date().toISOString();
      const out = await this.attempts(seq, name, fn, parsed, progress, cancellable);
      if (cancellable && exec.cancelled) {
        // Cancelled: never recorded, never run again once the cancel (queued before the abort) is durable.
        progress.end(exec.durable());
        return NEVER;
      }
      if ('aborted' in out || exec.state !== 'active') return NEVER;
      const op = stepRecord(seq, name, out, startedAt);
      // Not awaited: the run goes on at once; the next step body, wait or the completion
      // waits for this record (durable() / the commit queue), so nothing observable gets ahead of it.
      // The saved progress goes once the record is durable: a deposed engine's refused record leaves it to the next owner.
      progress.end(exec.record(op));
      const replayed = exec.afterReplay();
      if (replayed) await replayed;
      return fromRecord(op) as T;
    } finally {
      exec.stepEnds();
    }
  }

  /** A step's attempts, traced, with its retries, limits and signal (cancellable: the cancel's). */
  private async attempts(
    seq: number,
    name: string,
    fn: (args: StepArgs) => unknown,
    { retry, timeoutMs, heartbeatTimeoutMs, external }: ReturnType<typeof stepOptions>,
    progress: StepProgress,
    cancellable: boolean,
  ): Promise<AttemptsOutcome> {
    const exec = this.exec;
    const host = exec.host;
    const t0 = performance.now();
    const span = exec.trace?.step(seq, name); // undefined when tracing is off: fn runs as given
    const key = { workflowId: exec.workflowId, runNumber: exec.runNumber, seq };
    const body = external ? externalBody(fn, host.completions, key, progress) : fn;
    // Without step interceptors, the body as given (no closure per step).
    const hooked = hookedStep(host.options.interceptors, exec, name, body);
    const out = await runAttempts(span ? span.wrap(hooked) : hooked, {
      name,
      idempotencyKey: `${exec.workflowId}:${seq}`,
      retry,
      timeoutMs,
      heartbeatTimeoutMs,
      progress,
      tokenFor: external ? (attempt) => completionToken(key, attempt) : undefined,
      signal: cancellable ? exec.cancelSignal : exec.abort.signal,
      mayStart: () => exec.state === 'active' && host.mayRun(exec),
      clock: host.options.clock,
      onBackoff: (waiting) => exec.stepBackoff(waiting ? 1 : -1),
      accept: (value) => toStoredJson(value, `Result of step "${name}"`, host.maxPayloadBytes),
    });
    span?.end(out);
    host.stepFinished((performance.now() - t0) / 1000);
    return out;
  }

  /**
   * A transactional step (docs/transactions.md): each attempt runs `fn` in its own transaction and
   * commits the step's record (with whatever else the run has queued) in it, fenced; a failure is
   * recorded as a plain step's is, after the last attempt rolled back.
   */
  transaction<T>(name: string, fn: (manager: EntityManager, args: StepArgs) => T | Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    return this.guarded((cancellable) => this.runTransaction(name, fn, opts, cancellable));
  }

  private async runTransaction<T>(
    name: string,
    fn: (manager: EntityManager, args: StepArgs) => T | Promise<T>,
    opts: TransactionOptions,
    cancellable: boolean,
  ): Promise<T> {
    this.active('transaction');
    validateName('step name', name);
    const { retry, timeoutMs, isolation } = transactionOptions(name, fn, opts);
    const { seq, replay, live } = this.begin('step', name);
    if (replay) return replay as Promise<T>;
    if (!live) return NEVER;
    const exec = this.exec;
    if (cancellable && exec.cancelAhead) return NEVER;
    exec.stepBegins();
    try {
      await exec.durable();
      if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
      const t0 = performance.now();
      const accept = (value: unknown) => toStoredJson(value, `Result of step "${name}"`, exec.host.maxPayloadBytes);
      const signal = cancellable ? exec.cancelSignal : exec.abort.signal;
      const out = await runTransactionStep(exec, exec.host.transactions, { seq, name, fn, retry, isolation, timeoutMs, accept, signal });
      exec.host.stepFinished((performance.now() - t0) / 1000);
      const op = transactionOp(exec, out, cancellable);
      if (!op) return NEVER;
      if (op.status === 'failed') void exec.record(op); // nothing of the body to commit: a plain record
      const replayed = exec.afterReplay();
      if (replayed) await replayed;
      return fromRecord(op) as T;
    } finally {
      exec.stepEnds();
    }
  }

  /** Durable timer; survives restarts. */
  sleep(duration: Duration): Promise<void> {
    return this.guarded(async (cancellable) => {
      this.active('sleep');
      const ms = parseDuration(duration, 'ctx.sleep duration');
      const { seq, replay, live } = this.begin('sleep', 'sleep');
      if (replay) return replay as Promise<void>;
      if (!live || (cancellable && this.exec.cancelAhead)) return NEVER;
      await this.waitLive(seq, { kind: 'sleep', name: 'sleep', timer: 'sleep', shielded: !cancellable }, ms);
    });
  }

  /** Consumes the oldest unconsumed signal of that name; null on timeout. */
  waitForSignal<T = unknown>(name: string, opts: { timeout?: Duration } = {}): Promise<T | null> {
    return this.guarded((cancellable) => this.runWaitForSignal<T>(name, opts, cancellable));
  }

  private async runWaitForSignal<T>(name: string, opts: { timeout?: Duration }, cancellable: boolean): Promise<T | null> {
    this.active('waitForSignal');
    validateName('signal name', name);
    if (this.exec.definition.signalHandlers?.[name]) {
      throw new InvalidArgumentError(
        `waitForSignal("${name}")`,
        `workflow "${this.exec.definition.name}" has a signal handler for "${name}", which receives every such signal; wait with ctx.condition() instead`,
      );
    }
    const timeoutMs = opts.timeout === undefined ? undefined : parseDuration(opts.timeout, 'waitForSignal timeout');
    const { seq, replay, live } = this.begin('waitForSignal', name);
    if (replay) return replay as Promise<T | null>;
    if (!live || (cancellable && this.exec.cancelAhead)) return NEVER;
    return this.waitLive(
      seq,
      { kind: 'waitForSignal', name, timer: timeoutMs === undefined ? undefined : 'message-timeout', shielded: !cancellable },
      timeoutMs,
    ) as Promise<T | null>;
  }

  /** Waits until `pred()` holds, re-evaluated after each handler delivery; false on timeout. */
  condition(pred: () => boolean, opts: { timeout?: Duration } = {}): Promise<boolean> {
    return this.guarded((cancellable) => this.runCondition(pred, opts, cancellable));
  }

  private async runCondition(pred: () => boolean, opts: { timeout?: Duration }, cancellable: boolean): Promise<boolean> {
    this.active('condition');
    if (typeof pred !== 'function') throw new InvalidArgumentError('condition', 'needs a predicate function');
    const timeoutMs = opts.timeout === undefined ? undefined : parseDuration(opts.timeout, 'condition timeout');
    const { seq, replay, live } = this.begin('condition', 'condition');
    if (replay) return replay as Promise<boolean>;
    if (!live || (cancellable && this.exec.cancelAhead)) return NEVER;
    const exec = this.exec;
    if (!exec.isReplaying && pred()) {
      void exec.record({ seq, kind: 'condition', name: 'condition', status: 'completed', result: true });
      return true;
    }
    const timer = timeoutMs === undefined ? undefined : ('message-timeout' as const);
    return this.waitLive(seq, { kind: 'condition', name: 'condition', pred, timer, shielded: !cancellable }, timeoutMs) as Promise<boolean>;
  }

  /** Starts a child workflow; its completion reaches this workflow as a durable message. */
  async startChild<O = unknown>(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<ChildHandle<O>> {
    this.active('startChild');
    this.refuseIfCancelled();
    validateName('child workflow type', type);
    if (opts.workflowId !== undefined) validateWorkflowId(opts.workflowId);
    const { seq, replay, live } = this.begin('startChild', type);
    const handle = (workflowId: string): ChildHandle<O> => ({ workflowId, result: () => this.childResult<O>(workflowId) });
    if (replay) return replay.then((r) => handle((r as { workflowId: string }).workflowId));
    if (!live) return NEVER;
    const exec = this.exec;
    await exec.durable();
    if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
    const start = () => exec.host.startChild(exec, seq, type, input, opts);
    const childId = await (exec.trace ? exec.trace.within(start) : start()); // the child's span nests under this run's
    void exec.record({ seq, kind: 'startChild', name: type, status: 'completed', result: { workflowId: childId } });
    // As a step's: only a run still replaying waits (a live start takes no extra turn).
    const replayed = exec.afterReplay();
    if (replayed) await replayed;
    return handle(childId);
  }

  /** startChild, then wait for its result. */
  async executeChild<O = unknown>(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<O> {
    return (await this.startChild<O>(type, input, opts)).result();
  }

  private childResult<O>(childId: string): Promise<O> {
    return this.guarded((cancellable) => this.runChildResult<O>(childId, cancellable));
  }

  private async runChildResult<O>(childId: string, cancellable: boolean): Promise<O> {
    const { seq, replay, live } = this.begin('childResult', childId);
    const waits = live && !(cancellable && this.exec.cancelAhead);
    const wait = { kind: 'childResult' as const, name: childId, shielded: !cancellable };
    const outcome = (replay ?? (waits ? this.waitLive(seq, wait) : NEVER)) as Promise<ChildOutcome>;
    const r = await outcome;
    if (r.status === WorkflowStatus.Completed) return r.output as O;
    throw new ChildWorkflowFailedError(childId, r.status, r.error ? recordedError(r.error) : undefined);
  }

  /**
   * Signals another workflow (or this one): recorded once, like a step, and the signal is stored in
   * the very commit that records the call, so it is delivered exactly once across a restart or a
   * takeover of this run. A target that does not exist or has ended is a recorded failure (thrown
   * as StepFailedError, its cause the typed error); one that ends between the check and the commit
   * does not get it, as with engine.signal (docs/events-and-streams.md).
   */
  async signalWorkflow(workflowId: string, name: string, payload?: unknown): Promise<void> {
    this.active('signalWorkflow');
    validateWorkflowId(workflowId);
    validateName('signal name', name);
    const stored = toStoredJson(payload ?? null, `Payload of signal "${name}"`, this.exec.host.maxPayloadBytes);
    await this.external('signalWorkflow', `${workflowId}:${name}`, async () => {
      const status = await this.exec.host.external.status(workflowId);
      if (status === null) throw new WorkflowNotFoundError(workflowId);
      if (TERMINAL_STATUSES.includes(status as WorkflowStatus)) throw new WorkflowNotRunningError(workflowId, status);
      return { value: null, change: { sends: [{ workflowId, name, payload: stored }] } };
    });
  }

  /**
   * Cancels another workflow, recorded once like a step. Cancelling is idempotent, so a call run
   * again after a crash before its record finds it cancelled and does nothing more: the cancel
   * takes effect once. A target that already ended is left as it is.
   */
  async cancelWorkflow(workflowId: string): Promise<void> {
    this.active('cancelWorkflow');
    validateWorkflowId(workflowId);
    const reason = `Cancelled by workflow "${this.exec.workflowId}"`;
    await this.external('cancelWorkflow', workflowId, async () => {
      await this.exec.host.external.cancel(workflowId, reason);
      return { value: null };
    });
  }

  /**
   * Starts a workflow that is not a child (it outlives this one; no parent-close policy), recorded
   * once like a step. Its id, when not given, is derived from this run and call, and the start is
   * 'return-existing', so a call run again after a crash finds the workflow it started.
   */
  async startWorkflow(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<{ workflowId: string }> {
    this.active('startWorkflow');
    validateName('workflow type', type);
    if (opts.workflowId !== undefined) validateWorkflowId(opts.workflowId);
    const exec = this.exec;
    const stored = toStoredJson(input, `Input of workflow "${type}"`, exec.host.maxPayloadBytes);
    return (await this.external('startWorkflow', type, async (seq) => {
      const id = opts.workflowId ?? `${exec.workflowId}${exec.runNumber > 1 ? `#${exec.runNumber}` : ''}~${seq}`;
      const headers = Object.keys(exec.headers).length ? exec.headers : null; // inherited, like a child's
      return { value: { workflowId: await exec.host.external.start(type, stored, id, headers) } };
    })) as { workflowId: string };
  }

  /** A call on another workflow, recorded like a step's result (replayed in order, never run again once recorded). */
  private async external(
    kind: 'signalWorkflow' | 'cancelWorkflow' | 'startWorkflow',
    name: string,
    act: (seq: number) => Promise<{ value: unknown; change?: Change }>,
  ): Promise<unknown> {
    this.refuseIfCancelled();
    const { seq, replay, live } = this.begin(kind, name);
    if (replay) return replay;
    if (!live) return NEVER;
    const exec = this.exec;
    await exec.durable();
    if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
    let op: OperationRecord;
    let change: Change | undefined;
    try {
      const out = await act(seq);
      op = { seq, kind, name, status: 'completed', result: out.value };
      change = out.change;
    } catch (err) {
      op = { seq, kind, name, status: 'failed', error: describeError(err) };
    }
    if (exec.state !== 'active') return NEVER;
    void exec.record(op, change);
    const replayed = exec.afterReplay();
    if (replayed) await replayed;
    return fromRecord(op);
  }

  /** Registers a live wait, with its timer when it has a timeout; a due timer resolves it at once. */
  private async waitLive(seq: number, wait: Omit<Wait, 'resolve'>, timeoutMs?: number): Promise<unknown> {
    const exec = this.exec;
    const parked = exec.wait(seq, wait);
    if (wait.timer && timeoutMs !== undefined) {
      const timer = exec.timers.get(seq);
      if (timeoutMs === 0 || exec.firedTimers.has(seq) || (timer !== undefined && timer <= exec.loadedAtDbNow)) {
        exec.fireTimer(seq);
      } else if (!timer) {
        await exec.commit({ timers: [{ kind: wait.timer, seq, delayMs: timeoutMs }] });
        const fireAt = exec.host.options.clock.now() + timeoutMs;
        exec.timerStored(seq, new Date(fireAt));
        if (exec.waits.has(seq)) exec.host.timers.armed(exec.workflowId, seq, fireAt);
      } else if (!exec.readOnly) {
        exec.host.timers.armed(exec.workflowId, seq, timer.getTime()); // loaded: armed again by its new run
      }
    }
    return parked;
  }

  /**
   * Checked against the bounds before anything is taken or written (engine/attributes.ts); live,
   * recorded with the run's next commit, which merges it into the row; replayed, folded into the
   * run's attributes and not written again.
   */
  setAttributes(attrs: Record<string, AttributeInput>): void {
    this.active('setAttributes');
    const exec = this.exec;
    const next = mergeAttributes(exec.attributes, attrs);
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, 'setAttributes', 'setAttributes');
    if (rec === 'mismatch') throw new NonDeterminismStop();
    exec.attributesSet(next);
    if (rec || exec.readOnly || exec.state !== 'active') return;
    const patch = storedPatch(attrs); // as checked: the caller may change its object later
    void exec.record({ seq, kind: 'setAttributes', name: 'setAttributes', status: 'completed', result: patch }, { attributes: patch });
  }

  /**
   * Publishes `value` under `key` for engine.getEvent (docs/events-and-streams.md): checked before
   * anything is taken or written; live, recorded with the run's next commit, which upserts the
   * event and notifies in the same statement, so it is visible when that commit lands; replayed,
   * not written again. Resolves at once, live or replayed, so both take the same turns.
   */
  setEvent(key: string, value: unknown): Promise<void> {
    this.active('setEvent');
    validateName('event key', key);
    const exec = this.exec;
    const stored = toStoredJson(value, `Value of event "${key}"`, exec.host.maxPayloadBytes);
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, 'setEvent', key);
    if (rec === 'mismatch') throw new NonDeterminismStop();
    if (!rec && !exec.readOnly && exec.state === 'active') {
      void exec.record({ seq, kind: 'setEvent', name: key, status: 'completed', result: null }, { events: [{ key, value: stored, seq }] });
    }
    return Promise.resolve();
  }

  /**
   * An entry of stream `key` (docs/events-and-streams.md). From workflow code: recorded with the
   * run's next commit, which appends it (exactly once; a replay does not write it again). From a
   * step body: appended at once, tagged with the attempt, so at least once (a retried or re-run body
   * writes again). Refused after this run closed the key.
   */
  writeStream(key: string, value: unknown): Promise<void> {
    this.active('writeStream');
    validateName('stream key', key);
    const exec = this.exec;
    const stored = toStoredJson(value, `Entry of stream "${key}"`, exec.host.maxPayloadBytes);
    const step = currentStep();
    if (step) return exec.host.appendStream(exec.workflowId, key, stored, step.attempt);
    if (this.closedStreams.has(key)) throw new StreamClosedError(exec.workflowId, key);
    this.recordStream('writeStream', key, { key, value: stored });
    return Promise.resolve();
  }

  /** Closes stream `key`: its readers end after its last entry; recorded like writeStream. A second close does nothing. */
  closeStream(key: string): Promise<void> {
    this.active('closeStream');
    validateName('stream key', key);
    if (insideStepBody()) throw new InvalidArgumentError('ctx.closeStream', 'is called from workflow code, not from a step body');
    if (!this.closedStreams.has(key)) {
      this.closedStreams.add(key);
      this.recordStream('closeStream', key, { key, close: true });
    }
    return Promise.resolve();
  }

  private recordStream(kind: 'writeStream' | 'closeStream', key: string, write: StreamWrite): void {
    const exec = this.exec;
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, kind, key);
    if (rec === 'mismatch') throw new NonDeterminismStop();
    if (rec || exec.readOnly || exec.state !== 'active') return;
    void exec.record({ seq, kind, name: key, status: 'completed', result: null }, { streams: [write] });
  }

  now(): Date {
    const clock = this.exec.host.options.clock;
    return new Date(this.recorded('now', () => clock.now()) as number);
  }

  random(): number {
    return this.recorded('random', () => Math.random()) as number;
  }

  uuid(): string {
    return this.recorded('uuid', () => randomUUID()) as string;
  }

  /**
   * True when this code path is new to the run: a run that gets here live records a patch
   * marker (recorded with the next commit, no round trip) and takes the new path; a replay takes
   * the new path only where its history holds the marker, so runs recorded by older code keep
   * their old path (docs/versioning.md).
   */
  patched(patchId: string): boolean {
    return this.patchCheck(patchId, false);
  }

  /** The patch's second phase: no run without the marker remains; the new path always. */
  deprecatePatch(patchId: string): void {
    this.patchCheck(patchId, true);
  }

  private patchCheck(patchId: string, deprecated: boolean): boolean {
    this.active(deprecated ? 'deprecatePatch' : 'patched');
    validateName('patch id', patchId);
    const exec = this.exec;
    const seq = exec.nextSeq;
    const rec = exec.history.get(seq);
    if (rec?.kind === 'patch' && rec.name === patchId) {
      exec.takeSeq(false);
      return true;
    }
    // Inside recorded history (an operation here, or later ones): the run was made by code
    // before this patch, so its old path; nothing is consumed, the history's operation is next.
    if (rec || seq <= exec.maxRecordedSeq) return deprecated;
    exec.takeSeq(false);
    if (!exec.readOnly && exec.state === 'active') {
      exec.recordLazy({ seq, kind: 'patch', name: patchId, status: 'completed', result: { deprecated } });
    }
    return true;
  }

  /**
   * Not an operation: the switch commit replaces the whole history. It rejects with
   * ContinueAsNewStop so the run's code unwinds (a promise that never settled would keep the
   * ended run's instance alive); the switch itself is already under way, caught or not.
   */
  async continueAsNew(input: unknown): Promise<never> {
    this.active('continueAsNew');
    const exec = this.exec;
    const stored = toStoredJson(input, 'Input of ctx.continueAsNew()', exec.host.maxPayloadBytes);
    // The switch ends the run here (state 'finished'), so a caught stop cannot switch twice.
    if (exec.state === 'active') exec.host.continueAsNew(exec, stored);
    throw new ContinueAsNewStop();
  }

  private recorded(kind: 'now' | 'random' | 'uuid', make: () => unknown): unknown {
    this.active(kind);
    const exec = this.exec;
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, kind, kind);
    if (rec === 'mismatch') throw new NonDeterminismStop();
    if (rec) return rec.result;
    const value = make();
    exec.recordLazy({ seq, kind, name: kind, status: 'completed', result: value });
    return value;
  }
}

/**
 * A step completed from outside: the body runs (its value is not the result), then the attempt
 * waits for its completion. One stored while no engine ran the step is taken without running the
 * body again. A failure comes back as recorded: a NonRetryableError stops the retries.
 */
function externalBody(
  fn: (args: StepArgs) => unknown,
  completions: Pick<ExternalCompletions, 'wait'>,
  key: StepProgressKey,
  progress: StepProgress,
): (args: StepArgs) => Promise<unknown> {
  return async (args) => {
    let completion = progress.takeLoadedCompletion();
    if (!completion) {
      await fn(args);
      completion = await completions.wait(key, args.attempt, args.signal);
      progress.rowWritten();
    }
    if (completion.ok) return completion.value;
    throw recordedError(completion.error);
  };
}

/** A transactional step's options, checked before anything is taken or recorded. */
function transactionOptions(name: string, fn: unknown, opts: TransactionOptions) {
  if (typeof fn !== 'function') throw new InvalidArgumentError('ctx.transaction', 'needs a body function');
  return {
    retry: resolveRetry(opts.retry),
    timeoutMs: opts.timeout === undefined ? undefined : parseDuration(opts.timeout, `step "${name}" timeout`),
    isolation: validIsolation(opts.isolation),
  };
}

/** A step's options, checked before anything is taken or recorded. */
function stepOptions(name: string, opts: StepOptions) {
  if (opts.complete !== undefined && opts.complete !== 'external') {
    throw new InvalidArgumentError(`step "${name}" complete`, `must be 'external' when given (got ${String(opts.complete)})`);
  }
  return {
    retry: resolveRetry(opts.retry),
    timeoutMs: opts.timeout === undefined ? undefined : parseDuration(opts.timeout, `step "${name}" timeout`),
    heartbeatTimeoutMs: optionalPositive(opts.heartbeatTimeout, `step "${name}" heartbeatTimeout`),
    external: opts.complete === 'external',
  };
}

/** A duration option that must be longer than 0 ms when given. */
function optionalPositive(value: Duration | undefined, option: string): number | undefined {
  if (value === undefined) return undefined;
  const ms = parseDuration(value, option);
  if (ms <= 0) throw new InvalidArgumentError(option, `must be longer than 0 ms (got ${ms})`);
  return ms;
}

function validIsolation(isolation: TransactionOptions['isolation']): TransactionOptions['isolation'] {
  if (isolation !== undefined && !ISOLATION_LEVELS.includes(isolation)) {
    throw new InvalidArgumentError('isolation', `must be one of ${ISOLATION_LEVELS.join(', ')} (got ${String(isolation)})`);
  }
  return isolation;
}

interface ChildOutcome {
  status: string;
  output?: unknown;
  error?: { name?: string; message?: string } | null;
}

/** Thrown into synchronous ctx calls after a non-determinism was handled; the run is already stopped. */
export class NonDeterminismStop extends Error {
  constructor() {
    super('Workflow stopped: non-deterministic replay');
  }
}

/** What ctx.continueAsNew() throws to end the run's code; the engine has taken over the switch. */
export class ContinueAsNewStop extends Error {
  constructor() {
    super('The workflow continued as new: this run has ended');
  }
}

/**
 * What a transactional step hands the code: its committed record, or its failure to record; none
 * when it was stopped, its run moved on, or a cancel ended it (one committed before the cancel
 * reaches the code first: decision 0038).
 */
function transactionOp(exec: Execution, out: TransactionOutcome, cancellable: boolean): OperationRecord | undefined {
  if ('stopped' in out || exec.state !== 'active') return undefined;
  if ('committed' in out) return out.committed;
  return cancellable && exec.cancelled ? undefined : out.failed;
}

/** A step's outcome as recorded. */
function stepRecord(seq: number, name: string, out: AttemptsOutcome, startedAt: string): OperationRecord {
  if (out.ok) return { seq, kind: 'step', name, status: 'completed', result: out.value, attempts: out.attempts, startedAt };
  return {
    seq,
    kind: 'step',
    name,
    status: 'failed',
    error: describeError((out as { error: unknown }).error),
    attempts: out.attempts,
    startedAt,
  };
}

function fromRecord(rec: OperationRecord): unknown {
  if (rec.status === 'failed') {
    throw new StepFailedError(rec.name, rec.attempts ?? 1, recordedError(rec.error as Record<string, unknown> | undefined));
  }
  return rec.result;
}
