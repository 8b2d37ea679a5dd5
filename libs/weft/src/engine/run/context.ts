import { randomUUID } from 'node:crypto';
import type { EntityManager } from 'typeorm';
import { InvalidArgumentError, StreamClosedError } from '../../common/errors.js';
import { currentStep, insideStepBody, nonCancellableStorage } from '../als.js';
import type { StreamWrite } from '../../storage/types.js';
import type { Duration } from '../../common/duration.js';
import { Execution } from './execution.js';
import { mergeAttributes, storedPatch } from '../attributes.js';
import type {
  AttributeInput,
  ChildHandle,
  StepArgs,
  StepOptions,
  TransactionOptions,
  WeftLogger,
  WorkflowContext,
} from '../../common/types.js';
import { toStoredJson, validateName } from '../validation.js';
import { CallGate } from './calls/call-gate.js';
import { runStep } from './calls/step-call.js';
import { runTransaction } from './calls/transaction-call.js';
import { runCondition, runSleep, runWaitForSignal } from './calls/waits.js';
import { cancelWorkflow, executeChild, signalWorkflow, startChild, startWorkflow } from './calls/workflow-calls.js';

/**
 * The `ctx` of one run: every call takes the next sequence number and is recorded or replayed.
 * The calls that run something (steps, transactions, waits, calls on other workflows) are in
 * calls/, entered through the run's CallGate; the values recorded at the call are here.
 */
export class WorkflowContextImpl implements WorkflowContext {
  readonly logger: WeftLogger;
  /** The streams this run closed (live or replayed): a later write to one is refused at the call. */
  private readonly closedStreams = new Set<string>();
  private readonly gate: CallGate;

  /** @internal The engine builds one per run. */
  constructor(private readonly exec: Execution) {
    this.gate = new CallGate(exec);
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

  /** Throws where `ctx.<method>` may not be called (CallGate.active). */
  private active(method: string): void {
    this.gate.active(method);
  }

  /**
   * Runs `fn` so that a cancel does not end its calls: its steps, sleeps, waits and children run
   * to their end, within the engine's cancelGracePeriod counted from the cancel.
   */
  nonCancellable<T>(fn: () => T | Promise<T>): Promise<T> {
    this.active('nonCancellable');
    if (typeof fn !== 'function') throw new InvalidArgumentError('ctx.nonCancellable', 'needs a function');
    this.exec.shieldEntered();
    return nonCancellableStorage.run(true, async () => fn());
  }

  step<T>(name: string, fn: (args: StepArgs) => T | Promise<T>, opts: StepOptions = {}): Promise<T> {
    return this.gate.guarded((cancellable) => runStep(this.gate, name, fn, opts, cancellable));
  }

  /**
   * A transactional step (docs/transactions.md): each attempt runs `fn` in its own transaction and
   * commits the step's record (with whatever else the run has queued) in it, fenced; a failure is
   * recorded as a plain step's is, after the last attempt rolled back.
   */
  transaction<T>(name: string, fn: (manager: EntityManager, args: StepArgs) => T | Promise<T>, opts: TransactionOptions = {}): Promise<T> {
    return this.gate.guarded((cancellable) => runTransaction(this.gate, name, fn, opts, cancellable));
  }

  /** Durable timer; survives restarts. */
  sleep(duration: Duration): Promise<void> {
    return this.gate.guarded((cancellable) => runSleep(this.gate, duration, cancellable));
  }

  /** Consumes the oldest unconsumed signal of that name; null on timeout. */
  waitForSignal<T = unknown>(name: string, opts: { timeout?: Duration } = {}): Promise<T | null> {
    return this.gate.guarded((cancellable) => runWaitForSignal<T>(this.gate, name, opts, cancellable));
  }

  /** Waits until `pred()` holds, re-evaluated after each handler delivery; false on timeout. */
  condition(pred: () => boolean, opts: { timeout?: Duration } = {}): Promise<boolean> {
    return this.gate.guarded((cancellable) => runCondition(this.gate, pred, opts, cancellable));
  }

  /** Starts a child workflow; its completion reaches this workflow as a durable message. */
  startChild<O = unknown>(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<ChildHandle<O>> {
    return startChild<O>(this.gate, type, input, opts);
  }

  /** startChild, then wait for its result. */
  executeChild<O = unknown>(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<O> {
    return executeChild<O>(this.gate, type, input, opts);
  }

  /** Signals another workflow (or this one), recorded once like a step (calls/workflow-calls.ts). */
  signalWorkflow(workflowId: string, name: string, payload?: unknown): Promise<void> {
    return signalWorkflow(this.gate, workflowId, name, payload);
  }

  /** Cancels another workflow, recorded once like a step (calls/workflow-calls.ts). */
  cancelWorkflow(workflowId: string): Promise<void> {
    return cancelWorkflow(this.gate, workflowId);
  }

  /** Starts a workflow that is not a child, recorded once like a step (calls/workflow-calls.ts). */
  startWorkflow(type: string, input: unknown, opts: { workflowId?: string } = {}): Promise<{ workflowId: string }> {
    return startWorkflow(this.gate, type, input, opts);
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
    const rec = this.gate.replayed(seq, 'setAttributes', 'setAttributes');
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
    const rec = this.gate.replayed(seq, 'setEvent', key);
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
    const rec = this.gate.replayed(seq, kind, key);
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
    const rec = this.gate.replayed(seq, kind, kind);
    if (rec === 'mismatch') throw new NonDeterminismStop();
    if (rec) return rec.result;
    const value = make();
    exec.recordLazy({ seq, kind, name: kind, status: 'completed', result: value });
    return value;
  }
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
