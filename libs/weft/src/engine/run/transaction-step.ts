// A transactional step's attempts (docs/transactions.md, docs/decisions/0029): each attempt runs
// the body in a fresh transaction and, when the body returns, writes the step's record (with
// everything else the run has queued) in that same transaction, fenced and version-checked by the
// advance statement, and commits. A body error, a refused fence or a lost claim rolls it all back.
import type { EntityManager } from 'typeorm';
import { StepTimeoutError } from '../../common/errors.js';
import type { OperationRecord, StepArgs, TransactionIsolation } from '../../common/types.js';
import { CommitOutcomeUnknown, isSerializationFailure, type AppTransaction } from '../../storage/app-transaction.js';
import { isTransientDatabaseError } from '../../storage/database-errors.js';
import type { AdvanceCommand, AdvanceOutcome } from '../../storage/types.js';
import { stepBodyStorage } from '../als.js';
import { hookedStep } from '../interceptors.js';
import { setLongTimeout, type LongTimeout } from '../long-timeout.js';
import { backoffDelay, stopsRetrying, type ResolvedRetry } from '../retry.js';
import { describeError } from '../error-record.js';
import type { Execution, TransactionHost } from './execution.js';
import { abortableDelay } from './step-runner.js';
import { AttemptArgs } from './attempt-args.js';

/**
 * Serialization failures and deadlocks (40001, 40P01) of one attempt are tried again at once, up
 * to this many times, without counting as attempts: the body did nothing wrong.
 */
export const SERIALIZATION_RETRIES = 10;

export interface TransactionStep {
  seq: number;
  name: string;
  fn: (manager: EntityManager, args: StepArgs) => unknown;
  retry: ResolvedRetry;
  isolation?: TransactionIsolation;
  timeoutMs?: number;
  /** Aborted when its attempts must stop: the run's, or (outside ctx.nonCancellable) its cancel scope's. */
  signal: AbortSignal;
  /** Turns the body's value into what is recorded (the storable-payload check); a throw fails the attempt. */
  accept(value: unknown): unknown;
}

/** What the step came to: its record committed, its failure (to record as a plain step's), or nothing (stopped). */
export type TransactionOutcome = { committed: OperationRecord } | { failed: OperationRecord } | { stopped: true };

type AttemptResult = { ok: true; op: OperationRecord } | { ok: false; error: unknown } | { stopped: true };

/** Runs the step to its end; never throws. */
export async function runTransactionStep(exec: Execution, host: TransactionHost, step: TransactionStep): Promise<TransactionOutcome> {
  const startedAt = new Date().toISOString();
  const idempotencyKey = `${exec.workflowId}:${step.seq}`;
  for (let attempt = 1; ; attempt++) {
    const args = { attempt, idempotencyKey, startedAt };
    let result = await attemptOnce(exec, host, step, args);
    // Serialization failures and deadlocks, tried again at once (inline: an async frame less a step).
    for (let again = 0; again < SERIALIZATION_RETRIES && retriesAtOnce(result); again++) {
      // Jittered and growing a little, so two transactions that conflict do not meet again at once.
      if (!(await abortableDelay(Math.min(5 * 2 ** again, 500) * Math.random(), step.signal))) return { stopped: true };
      result = await attemptOnce(exec, host, step, args);
    }
    if ('stopped' in result) return result;
    if (result.ok) return { committed: result.op };
    const error = result.error;
    if (attempt >= step.retry.maxAttempts || stopsRetrying(step.retry, error)) {
      const op: OperationRecord = {
        seq: step.seq,
        kind: 'step',
        name: step.name,
        status: 'failed',
        error: describeError(error),
        attempts: attempt,
        startedAt,
      };
      return { failed: op };
    }
    if (!(await abortableDelay(backoffDelay(step.retry, attempt), step.signal, exec.host.options.clock))) return { stopped: true };
  }
}

/** An attempt that failed by a serialization failure or a deadlock: the same attempt again, not counted. */
const retriesAtOnce = (result: AttemptResult): boolean => 'ok' in result && !result.ok && isSerializationFailure(result.error);

/** One transaction: the body, then the record and COMMIT on the same connection. */
async function attemptOnce(
  exec: Execution,
  host: TransactionHost,
  step: TransactionStep,
  args: { attempt: number; idempotencyKey: string; startedAt: string },
): Promise<AttemptResult> {
  if (exec.state !== 'active' || !exec.host.mayRun(exec)) return { stopped: true };
  let tx: AppTransaction;
  try {
    tx = await host.beginTransaction(step.isolation);
  } catch (error) {
    return { ok: false, error };
  }
  // Judged again: the wait for a connection (all transaction slots busy) may outlast the hold, e.g.
  // a pause past the lease TTL, whose successor may have recorded this step meanwhile.
  if (exec.state !== 'active' || !exec.host.mayRun(exec)) {
    await tx.rollback();
    return { stopped: true };
  }
  try {
    const value = step.accept(await runBody(exec, step, tx.manager, args));
    if (exec.state !== 'active' || step.signal.aborted) {
      await tx.rollback();
      return { stopped: true };
    }
    const op: OperationRecord = {
      seq: step.seq,
      kind: 'step',
      name: step.name,
      status: 'completed',
      result: value,
      attempts: args.attempt,
      startedAt: args.startedAt,
    };
    const send = (command: AdvanceCommand) => host.commitInTransaction(exec, command, tx, step.seq);
    if (step.isolation === undefined || step.isolation === 'read committed') return await riding(exec, op, tx, send);
    // Stricter levels: the record or the COMMIT may fail with 40001 (a commit of the run beside
    // the body), tried again at once while the code waits.
    const outcome = await exec.recordThrough(op, send);
    return outcome.ok ? { ok: true, op } : { stopped: true }; // refused: the run is stale (its queue said so)
  } catch (error) {
    await tx.rollback();
    if (error instanceof CommitOutcomeUnknown) {
      // The COMMIT may have landed: only storage knows. The run is re-read from it and either
      // finds the record or runs the body again (its writes then rolled back with the rest).
      exec.stop();
      exec.host.onStale(exec, 'error', error.cause);
      return { stopped: true };
    }
    if (step.signal.aborted) return { stopped: true };
    return { ok: false, error };
  }
}

/**
 * The record commits after the code went on to its next wait, with what the code queued meanwhile
 * (Execution.recordRiding, decision 0043): the result is the code's at once. Refused: the run is
 * stale (its queue said so). A throw (a lost connection, an unknown COMMIT, a serialization
 * failure) stopped the run, whose code went past the step: it is re-read from storage, which holds
 * the record iff the transaction committed, so the body runs again only if its writes did not. A
 * statement the database refuses for good suspends the workflow, as on the group commit path.
 */
async function riding(
  exec: Execution,
  op: OperationRecord,
  tx: AppTransaction,
  send: (command: AdvanceCommand) => Promise<AdvanceOutcome>,
): Promise<AttemptResult> {
  const { committed } = await exec.recordRiding(op, send);
  void committed.catch(async (error: unknown) => {
    await tx.rollback();
    const cause = error instanceof CommitOutcomeUnknown ? error.cause : error;
    if (error instanceof CommitOutcomeUnknown || isSerializationFailure(error) || isTransientDatabaseError(error))
      exec.host.onStale(exec, 'error', cause);
    else exec.host.onCommitError(exec, error);
  });
  return { ok: true, op };
}

/** The body in the step's async context (currentStep().manager), raced against its timeout and the run's abort. */
async function runBody(
  exec: Execution,
  step: TransactionStep,
  manager: EntityManager,
  args: { attempt: number; idempotencyKey: string },
): Promise<unknown> {
  const parent = step.signal;
  // Without a timeout the body's signal is the step's own: an AbortController and a listener
  // forwarding to it per attempt are a measurable share of a short step (docs/performance.md).
  const controller = step.timeoutMs === undefined ? undefined : new AbortController();
  const signal = controller?.signal ?? parent;
  const onAbort = () => controller?.abort(parent.reason);
  if (controller) parent.addEventListener('abort', onAbort, { once: true });
  let timer: LongTimeout | undefined;
  let aborted: (() => void) | undefined;
  const stepArgs: StepArgs = new AttemptArgs(args.attempt, args.idempotencyKey, signal);
  stepArgs.manager = manager;
  try {
    const fn = hookedStep(exec.host.options.interceptors, exec, step.name, () => step.fn(manager, stepArgs));
    const run = () => stepBodyStorage.run(stepArgs, () => fn(stepArgs));
    // One promise settles with the body or the abort, whichever comes first (a race of the body and
    // a promise of the abort cost four more a step: docs/decisions/0055). A late settlement of the
    // body after an abort is handled by its `then` here, so it is never unhandled.
    return await new Promise<unknown>((resolve, reject) => {
      aborted = () => reject(signal.reason ?? new Error('aborted'));
      if (signal.aborted) aborted();
      else signal.addEventListener('abort', aborted, { once: true });
      if (controller && step.timeoutMs !== undefined) {
        const ms = step.timeoutMs;
        timer = setLongTimeout(() => controller.abort(new StepTimeoutError(step.name, ms)), ms);
      }
      Promise.resolve()
        .then(() => exec.host.transactions.withinAmbient(manager, run))
        .then(resolve, reject);
    });
  } finally {
    timer?.clear();
    // The step's signal outlives the attempt: its listener goes with it.
    if (aborted) signal.removeEventListener('abort', aborted);
    if (controller) parent.removeEventListener('abort', onAbort);
  }
}
