// ctx.transaction on the runtime side: its options, its seq and replay, and what its outcome
// hands the code. Its attempts and their commit are transaction-step.ts (docs/transactions.md).
import type { EntityManager } from 'typeorm';
import { InvalidArgumentError } from '../../../common/errors.js';
import { parseDuration } from '../../../common/duration.js';
import type { OperationRecord, StepArgs, TransactionOptions } from '../../../common/types.js';
import { ISOLATION_LEVELS } from '../../../storage/app-transaction.js';
import { resolveRetry } from '../../retry.js';
import { toStoredJson, validateName } from '../../validation.js';
import { Execution, NEVER } from '../execution.js';
import { runTransactionStep, type TransactionOutcome } from '../transaction-step.js';
import { CallGate, fromRecord } from './call-gate.js';

/**
 * A live transactional step: each attempt runs `fn` in its own transaction and commits the step's
 * record (with whatever else the run has queued) in it, fenced; a failure is recorded as a plain
 * step's is, after the last attempt rolled back.
 */
export async function runTransaction<T>(
  gate: CallGate,
  name: string,
  fn: (manager: EntityManager, args: StepArgs) => T | Promise<T>,
  opts: TransactionOptions,
  cancellable: boolean,
): Promise<T> {
  gate.active('transaction');
  validateName('step name', name);
  const { retry, timeoutMs, isolation } = transactionOptions(name, fn, opts);
  const { seq, replay, live } = gate.begin('step', name);
  if (replay) return replay as Promise<T>;
  if (!live) return NEVER;
  const exec = gate.exec;
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

/** A transactional step's options, checked before anything is taken or recorded. */
function transactionOptions(name: string, fn: unknown, opts: TransactionOptions) {
  if (typeof fn !== 'function') throw new InvalidArgumentError('ctx.transaction', 'needs a body function');
  return {
    retry: resolveRetry(opts.retry),
    timeoutMs: opts.timeout === undefined ? undefined : parseDuration(opts.timeout, `step "${name}" timeout`),
    isolation: validIsolation(opts.isolation),
  };
}

function validIsolation(isolation: TransactionOptions['isolation']): TransactionOptions['isolation'] {
  if (isolation !== undefined && !ISOLATION_LEVELS.includes(isolation)) {
    throw new InvalidArgumentError('isolation', `must be one of ${ISOLATION_LEVELS.join(', ')} (got ${String(isolation)})`);
  }
  return isolation;
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
