import { StepTimeoutError } from '../errors';
import { stepBodyStorage } from './als';
import { backoffDelay, ResolvedRetry } from './retry';
import type { StepArgs } from './types';

export type AttemptsOutcome =
  | { ok: true; value: unknown; attempts: number }
  | { ok: false; error: unknown; attempts: number }
  | { ok: false; aborted: true; attempts: number };

function abortableDelay(ms: number, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(false);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** One attempt: the step body raced against its timeout and the execution's abort. */
async function attemptOnce(
  fn: (args: StepArgs) => unknown,
  args: Omit<StepArgs, 'signal'>,
  name: string,
  timeoutMs: number | undefined,
  parent: AbortSignal,
): Promise<unknown> {
  const controller = new AbortController();
  const onParentAbort = () => controller.abort(parent.reason);
  parent.addEventListener('abort', onParentAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  try {
    const stepArgs = { ...args, signal: controller.signal };
    const body = Promise.resolve().then(() => stepBodyStorage.run(stepArgs, () => fn(stepArgs)));
    if (timeoutMs === undefined) return await body;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const err = new StepTimeoutError(name, timeoutMs);
        controller.abort(err);
        reject(err);
      }, timeoutMs);
    });
    body.catch(() => undefined); // a late rejection after the timeout is not unhandled
    return await Promise.race([body, timeout]);
  } finally {
    if (timer) clearTimeout(timer);
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
    /** Checked before every retry: false once this engine may no longer run the workflow. */
    mayRetry?: () => boolean;
  },
): Promise<AttemptsOutcome> {
  for (let attempt = 1; ; attempt++) {
    if (opts.signal.aborted || (attempt > 1 && opts.mayRetry?.() === false)) return { ok: false, aborted: true, attempts: attempt - 1 };
    try {
      const value = await attemptOnce(fn, { attempt, idempotencyKey: opts.idempotencyKey }, opts.name, opts.timeoutMs, opts.signal);
      return { ok: true, value, attempts: attempt };
    } catch (error) {
      if (opts.signal.aborted) return { ok: false, aborted: true, attempts: attempt };
      const name = (error as { name?: string })?.name ?? 'Error';
      if (attempt >= opts.retry.maxAttempts || opts.retry.nonRetryable.has(name)) return { ok: false, error, attempts: attempt };
      const waited = await abortableDelay(backoffDelay(opts.retry, attempt), opts.signal);
      if (!waited) return { ok: false, aborted: true, attempts: attempt };
    }
  }
}

export function describeError(err: unknown): { name: string; message: string; stack?: string } {
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: typeof err === 'string' ? err : (JSON.stringify(err) ?? String(err)) };
}
