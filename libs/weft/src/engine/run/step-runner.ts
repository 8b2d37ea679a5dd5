import { StepMaxElapsedError, StepTimeoutError } from '../../common/errors.js';
import { stepBodyStorage } from '../als.js';
import { LongTimeout, setLongTimeout } from '../long-timeout.js';
import type { WorkflowClock } from '../../common/clock.js';
import { backoffDelay, ResolvedRetry, stopsRetrying } from '../retry.js';
import type { StepArgs } from '../../common/types.js';

export type AttemptsOutcome =
  | { ok: true; value: unknown; attempts: number }
  | { ok: false; error: unknown; attempts: number }
  | { ok: false; aborted: true; attempts: number };

const realTime: Pick<WorkflowClock, 'setTimer'> = { setTimer: setLongTimeout };

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

/** What ends an attempt besides its body: a per-attempt timeout and the step's maxElapsed deadline. */
interface AttemptLimits {
  timeoutMs?: number;
  /** Date.now() at which retry.maxElapsed runs out. */
  deadlineAt?: number;
  maxElapsedMs?: number;
}

/** One attempt: the step body raced against its timeout, its deadline and the execution's abort. */
async function attemptOnce(
  fn: (args: StepArgs) => unknown,
  args: Omit<StepArgs, 'signal'>,
  name: string,
  limits: AttemptLimits,
  parent: AbortSignal,
  mayStart?: () => boolean,
): Promise<unknown> {
  // The ownership check runs in the same microtask as the body's first line: an engine paused
  // between a check and the body (a burst of steps resuming at once) re-checks after the pause.
  const start = (stepArgs: StepArgs) =>
    Promise.resolve().then(() => {
      if (mayStart && !mayStart()) throw new NotStarted();
      return stepBodyStorage.run(stepArgs, () => fn(stepArgs));
    });
  // Without a limit, the attempt's signal is the run's own: an AbortController and a listener
  // per attempt are a measurable share of a short step (docs/performance.md).
  if (limits.timeoutMs === undefined && limits.deadlineAt === undefined) return start({ ...args, signal: parent });
  // The nearer of the attempt's timeout and the step's deadline ends it.
  const toDeadline = limits.deadlineAt === undefined ? Infinity : Math.max(0, limits.deadlineAt - Date.now());
  const byDeadline = toDeadline < (limits.timeoutMs ?? Infinity);
  const ms = byDeadline ? toDeadline : limits.timeoutMs!;
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: LongTimeout | undefined;
  try {
    const body = start({ ...args, signal: controller.signal });
    const timeout = new Promise<never>((_, reject) => {
      timer = setLongTimeout(() => {
        const err = byDeadline ? new StepMaxElapsedError(name, limits.maxElapsedMs!) : new StepTimeoutError(name, ms);
        controller.abort(err);
        reject(err);
      }, ms);
    });
    body.catch(() => undefined); // a late rejection after the timeout is not unhandled
    return await Promise.race([body, timeout]);
  } finally {
    timer?.clear();
    parent.removeEventListener('abort', onParentAbort);
  }
}

/** Runs a step body with retries and backoff; never throws. */
export async function runAttempts(
  fn: (args: StepArgs) => unknown,
  opts: {
    name: string;
    idempotencyKey: string;
    retry: ResolvedRetry;
    timeoutMs?: number;
    signal: AbortSignal;
    /** Checked right before every attempt's body: false once this engine may no longer run the workflow. */
    mayStart?: () => boolean;
    /** Where the backoff between attempts waits (default real time). */
    clock?: Pick<WorkflowClock, 'setTimer'>;
    /** Told when a backoff begins (true) and ends (false). */
    onBackoff?: (waiting: boolean) => void;
    /**
     * Turns an attempt's value into what is recorded; a throw fails that attempt like the body
     * throwing would (a result PostgreSQL cannot store is retried per the policy, never committed).
     */
    accept?: (value: unknown) => unknown;
    /** Date.now() of the step's first attempt when an earlier owner began it (retry.maxElapsed counts from it). */
    firstStartedAt?: number;
  },
): Promise<AttemptsOutcome> {
  const maxElapsedMs = opts.retry.maxElapsedMs;
  const deadlineAt = maxElapsedMs === undefined ? undefined : (opts.firstStartedAt ?? Date.now()) + maxElapsedMs;
  const limits: AttemptLimits = { timeoutMs: opts.timeoutMs, deadlineAt, maxElapsedMs };
  for (let attempt = 1; ; attempt++) {
    if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt - 1 };
    try {
      const args = { attempt, idempotencyKey: opts.idempotencyKey };
      const value = await attemptOnce(fn, args, opts.name, limits, opts.signal, opts.mayStart);
      return { ok: true, value: opts.accept ? opts.accept(value) : value, attempts: attempt };
    } catch (error) {
      if (error instanceof NotStarted) return { ok: false, aborted: true, attempts: attempt - 1 };
      if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt };
      const next = afterFailure(opts.retry, opts.name, error, attempt, deadlineAt);
      if ('fail' in next) return { ok: false, error: next.fail, attempts: attempt };
      const delay = next.delay;
      opts.onBackoff?.(true);
      const waited = await abortableDelay(delay, opts.signal, opts.clock ?? realTime).finally(() => opts.onBackoff?.(false));
      if (!waited) return { ok: false, aborted: true, attempts: attempt };
    }
  }
}

/** After a failed attempt: the error the step fails with now, or the backoff before the next attempt. */
function afterFailure(
  retry: ResolvedRetry,
  name: string,
  error: unknown,
  attempt: number,
  deadlineAt: number | undefined,
): { fail: unknown } | { delay: number } {
  if (attempt >= retry.maxAttempts || stopsRetrying(retry, error) || error instanceof StepMaxElapsedError) return { fail: error };
  const delay = backoffDelay(retry, attempt);
  // No retry begins past the deadline: the step fails now with the last attempt's error as cause.
  if (deadlineAt !== undefined && Date.now() + delay >= deadlineAt) {
    return { fail: new StepMaxElapsedError(name, retry.maxElapsedMs!, { cause: error }) };
  }
  return { delay };
}
