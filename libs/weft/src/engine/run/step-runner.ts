import { StepTimeoutError } from '../../common/errors.js';
import { stepBodyStorage } from '../als.js';
import { LongTimeout, setLongTimeout } from '../long-timeout.js';
import type { WorkflowClock } from '../../common/clock.js';
import { backoffDelay, ResolvedRetry } from '../retry.js';
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

/** One attempt: the step body raced against its timeout and the execution's abort. */
async function attemptOnce(
  fn: (args: StepArgs) => unknown,
  args: Omit<StepArgs, 'signal'>,
  name: string,
  timeoutMs: number | undefined,
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
  // Without a timeout, the attempt's signal is the run's own: an AbortController and a listener
  // per attempt are a measurable share of a short step (docs/performance.md).
  if (timeoutMs === undefined) return start({ ...args, signal: parent });
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: LongTimeout | undefined;
  try {
    const body = start({ ...args, signal: controller.signal });
    const timeout = new Promise<never>((_, reject) => {
      timer = setLongTimeout(() => {
        const err = new StepTimeoutError(name, timeoutMs);
        controller.abort(err);
        reject(err);
      }, timeoutMs);
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
  },
): Promise<AttemptsOutcome> {
  for (let attempt = 1; ; attempt++) {
    if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt - 1 };
    try {
      const args = { attempt, idempotencyKey: opts.idempotencyKey };
      const value = await attemptOnce(fn, args, opts.name, opts.timeoutMs, opts.signal, opts.mayStart);
      return { ok: true, value: opts.accept ? opts.accept(value) : value, attempts: attempt };
    } catch (error) {
      if (error instanceof NotStarted) return { ok: false, aborted: true, attempts: attempt - 1 };
      if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt };
      const name = (error as { name?: string })?.name ?? 'Error';
      if (attempt >= opts.retry.maxAttempts || opts.retry.nonRetryable.has(name)) return { ok: false, error, attempts: attempt };
      opts.onBackoff?.(true);
      const waited = await abortableDelay(backoffDelay(opts.retry, attempt), opts.signal, opts.clock ?? realTime).finally(() =>
        opts.onBackoff?.(false),
      );
      if (!waited) return { ok: false, aborted: true, attempts: attempt };
    }
  }
}
