// ctx.step on the runtime side: its options, its attempts (retries, limits, heartbeats, an
// external completion) through runAttempts, and its record.
import { InvalidArgumentError, recordedError } from '../../../common/errors.js';
import { Duration, parseDuration } from '../../../common/duration.js';
import type { OperationRecord, StepArgs, StepOptions } from '../../../common/types.js';
import type { StepProgressKey } from '../../../storage/repositories/step-progress.repository.js';
import { describeError } from '../../error-record.js';
import { hookedStep } from '../../interceptors.js';
import { resolveRetry } from '../../retry.js';
import { toStoredJson, validateName } from '../../validation.js';
import { NEVER } from '../execution.js';
import { completionToken, type ExternalCompletions } from '../external-completions.js';
import { StepProgress } from '../step-progress.js';
import { runAttempts, type AttemptsOutcome } from '../step-runner.js';
import { CallGate, fromRecord } from './call-gate.js';

/** A live step: waits for what came before, runs its attempts, records their outcome (cancellable: the cancel's signal). */
export async function runStep<T>(
  gate: CallGate,
  name: string,
  fn: (args: StepArgs) => T | Promise<T>,
  opts: StepOptions,
  cancellable: boolean,
): Promise<T> {
  gate.active('step');
  validateName('step name', name);
  const parsed = stepOptions(name, opts); // refused before a seq is taken
  const { seq, replay, live } = gate.begin('step', name);
  if (replay) return replay as Promise<T>;
  if (!live) return NEVER;
  const exec = gate.exec;
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
    exec.epoch,
  );
  exec.stepBegins();
  try {
    // A body's side effects may only follow what earlier calls recorded.
    await exec.durable();
    if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
    const startedAt = new Date().toISOString();
    const out = await attempts(gate, seq, name, fn, parsed, progress, cancellable);
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
async function attempts(
  gate: CallGate,
  seq: number,
  name: string,
  fn: (args: StepArgs) => unknown,
  { retry, timeoutMs, heartbeatTimeoutMs, external }: ReturnType<typeof stepOptions>,
  progress: StepProgress,
  cancellable: boolean,
): Promise<AttemptsOutcome> {
  const exec = gate.exec;
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
