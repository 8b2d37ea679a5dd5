import { StepHeartbeatTimeoutError, StepMaxElapsedError, StepTimeoutError } from '../../common/errors.js';
import { AttemptArgs } from './attempt-args.js';
import type { StepProgress } from './step-progress.js';
import { stepBodyStorage } from '../als.js';
import { LongTimeout, setLongTimeout } from '../long-timeout.js';
import type { WorkflowClock } from '../../common/clock.js';
import { backoffDelay, ResolvedRetry, stopsRetrying } from '../retry.js';
import type { StepArgs } from '../../common/types.js';

export type AttemptsOutcome =
  | { ok: true; value: unknown; attempts: number }
  | { ok: false; error: unknown; attempts: number }
  | { ok: false; aborted: true; attempts: number };

const realTime: Pick<WorkflowClock, 'setTimer' | 'now'> = { setTimer: setLongTimeout, now: () => Date.now() };

/**
 * Resolves true after `ms`, false at once when `signal` aborts first. Retry backoff is workflow
 * time (common/clock.ts), so its callers pass the run's clock, which the testing kit's skips.
 */
export function abortableDelay(ms: number, signal: AbortSignal, clock: Pick<WorkflowClock, 'setTimer'> = realTime): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const t = clock.setTimer(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      t.clear();
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The ownership check right before a body's first line said no: the attempt never started. */
class NotStarted extends Error {}

/** What ends an attempt besides its body: a per-attempt timeout, the step's maxElapsed deadline, stopped heartbeats. */
interface AttemptLimits {
  timeoutMs?: number;
  /** When retry.maxElapsed runs out, on workflow time (the testing kit's clock skips it): the first start's, or an earlier owner's. */
  deadlineAt?: number;
  /** Workflow time now. */
  now: () => number;
  maxElapsedMs?: number;
  heartbeatTimeoutMs?: number;
}

/** What one attempt is: its number, the step's key and progress, and what ends it. */
interface Attempt {
  attempt: number;
  idempotencyKey: string;
  name: string;
  limits: AttemptLimits;
  progress?: StepProgress;
  completionToken?: string;
}

/** One attempt: the step body raced against its limits and the execution's abort. */
async function attemptOnce(fn: (args: StepArgs) => unknown, at: Attempt, parent: AbortSignal, mayStart?: () => boolean): Promise<unknown> {
  // The ownership check runs in the same microtask as the body's first line: an engine paused
  // between a check and the body (a burst of steps resuming at once) re-checks after the pause.
  const start = (signal: AbortSignal) =>
    Promise.resolve().then(() => {
      if (mayStart && !mayStart()) throw new NotStarted();
      const stepArgs = new AttemptArgs(at.attempt, at.idempotencyKey, signal, at.progress, at.completionToken);
      return stepBodyStorage.run(stepArgs, () => fn(stepArgs));
    });
  const { limits } = at;
  // Without a limit, the attempt's signal is the run's own: an AbortController and a listener
  // per attempt are a measurable share of a short step (docs/performance.md).
  if (limits.timeoutMs === undefined && limits.deadlineAt === undefined && limits.heartbeatTimeoutMs === undefined) {
    return start(parent);
  }
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  const timers: LongTimeout[] = [];
  try {
    const body = start(controller.signal);
    const ended = new Promise<never>((_, reject) => {
      const fail = (err: Error) => {
        controller.abort(err);
        reject(err);
      };
      armLimits(at, timers, fail);
    });
    body.catch(() => undefined); // a late rejection after the timeout is not unhandled
    return await Promise.race([body, ended]);
  } finally {
    for (const t of timers) t.clear();
    parent.removeEventListener('abort', onParentAbort);
  }
}

/** Arms the attempt's timers: the nearer of its timeout and the step's deadline, and its heartbeat check. */
function armLimits(at: Attempt, timers: LongTimeout[], fail: (err: Error) => void): void {
  const { limits, name } = at;
  const toDeadline = limits.deadlineAt === undefined ? Infinity : Math.max(0, limits.deadlineAt - limits.now());
  if (toDeadline < (limits.timeoutMs ?? Infinity)) {
    timers.push(setLongTimeout(() => fail(new StepMaxElapsedError(name, limits.maxElapsedMs!)), toDeadline));
  } else if (limits.timeoutMs !== undefined) {
    const ms = limits.timeoutMs;
    timers.push(setLongTimeout(() => fail(new StepTimeoutError(name, ms)), ms));
  }
  const hbMs = limits.heartbeatTimeoutMs;
  const progress = at.progress;
  if (hbMs === undefined || !progress) return;
  // One timer per heartbeatTimeout, not per heartbeat: when it fires it looks at the last beat.
  const check = () => {
    const quiet = performance.now() - progress.lastBeatAt;
    if (quiet >= hbMs) return fail(new StepHeartbeatTimeoutError(name, hbMs));
    timers[timers.length - 1] = setLongTimeout(check, hbMs - quiet);
  };
  timers.push(setLongTimeout(check, hbMs));
}

/** Runs a step body with retries and backoff; never throws. */
export async function runAttempts(
  fn: (args: StepArgs) => unknown,
  opts: {
    name: string;
    idempotencyKey: string;
    retry: ResolvedRetry;
    timeoutMs?: number;
    heartbeatTimeoutMs?: number;
    signal: AbortSignal;
    /** Checked right before every attempt's body: false once this engine may no longer run the workflow. */
    mayStart?: () => boolean;
    /** Where the backoff between attempts waits, and what retry.maxElapsed counts on (default real time). */
    clock?: Pick<WorkflowClock, 'setTimer' | 'now'>;
    /** Told when a backoff begins (true) and ends (false). */
    onBackoff?: (waiting: boolean) => void;
    /**
     * Turns an attempt's value into what is recorded; a throw fails that attempt like the body
     * throwing would (a result PostgreSQL cannot store is retried per the policy, never committed).
     */
    accept?: (value: unknown) => unknown;
    /** Its heartbeats, attempt and first start, loaded when an earlier owner began it (step-progress.ts). */
    progress?: StepProgress;
    /** `{ complete: 'external' }`: the token of each attempt. */
    tokenFor?: (attempt: number) => string;
  },
): Promise<AttemptsOutcome> {
  const { progress } = opts;
  const maxElapsedMs = opts.retry.maxElapsedMs;
  const clock = opts.clock ?? realTime;
  const now = () => clock.now();
  const limits: AttemptLimits = { timeoutMs: opts.timeoutMs, maxElapsedMs, heartbeatTimeoutMs: opts.heartbeatTimeoutMs, now };
  const first = (progress?.attemptsBefore ?? 0) + 1;
  let lastError: unknown;
  for (let attempt = first; ; attempt++) {
    if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt - 1 };
    const late = beginAttempt(attempt, limits, opts.name, progress);
    if (late) return { ok: false, error: withLastCause(late, lastError), attempts: attempt - 1 };
    try {
      const completionToken = opts.tokenFor?.(attempt);
      const at: Attempt = { attempt, idempotencyKey: opts.idempotencyKey, name: opts.name, limits, progress, completionToken };
      const value = await attemptOnce(fn, at, opts.signal, opts.mayStart);
      return { ok: true, value: opts.accept ? opts.accept(value) : value, attempts: attempt };
    } catch (error) {
      if (error instanceof NotStarted) return { ok: false, aborted: true, attempts: attempt - 1 };
      if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt };
      const next = afterFailure(opts.retry, opts.name, error, attempt, limits);
      if ('fail' in next) return { ok: false, error: withLastCause(next.fail, lastError), attempts: attempt };
      lastError = error;
      opts.onBackoff?.(true);
      const waited = await abortableDelay(next.delay, opts.signal, clock).finally(() => opts.onBackoff?.(false));
      if (!waited) return { ok: false, aborted: true, attempts: attempt };
    }
  }
}

/** An attempt begins: its progress and deadline set; a StepMaxElapsedError when it is taken over past its deadline. */
function beginAttempt(attempt: number, limits: AttemptLimits, name: string, progress?: StepProgress): StepMaxElapsedError | undefined {
  const maxElapsedMs = limits.maxElapsedMs;
  const now = maxElapsedMs === undefined ? undefined : limits.now();
  progress?.attemptBegins(attempt, maxElapsedMs !== undefined, limits.heartbeatTimeoutMs !== undefined, now);
  if (maxElapsedMs === undefined || now === undefined) return undefined;
  // Set once, at the first attempt: counted from each attempt's start it would move on with them and never bind.
  limits.deadlineAt ??= (progress?.firstStartedAt ?? now) + maxElapsedMs;
  return attempt > 1 && now >= limits.deadlineAt ? new StepMaxElapsedError(name, maxElapsedMs) : undefined;
}

/**
 * A step out of its maxElapsed with no cause of its own (its deadline came during an attempt, or a
 * late backoff ended past it) fails with the last attempt's error as the cause, as one stopped
 * between attempts does.
 */
function withLastCause(error: unknown, lastError: unknown): unknown {
  if (!(error instanceof StepMaxElapsedError) || error.cause !== undefined || lastError === undefined) return error;
  return new StepMaxElapsedError(error.stepName, error.maxElapsedMs, { cause: lastError });
}

/** After a failed attempt: the error the step fails with now, or the backoff before the next attempt. */
function afterFailure(
  retry: ResolvedRetry,
  name: string,
  error: unknown,
  attempt: number,
  limits: AttemptLimits,
): { fail: unknown } | { delay: number } {
  const deadlineAt = limits.deadlineAt;
  if (attempt >= retry.maxAttempts || stopsRetrying(retry, error) || error instanceof StepMaxElapsedError) return { fail: error };
  const delay = backoffDelay(retry, attempt);
  // No retry begins past the deadline: the step fails now with the last attempt's error as cause.
  if (deadlineAt !== undefined && limits.now() + delay >= deadlineAt) {
    return { fail: new StepMaxElapsedError(name, retry.maxElapsedMs!, { cause: error }) };
  }
  return { delay };
}
