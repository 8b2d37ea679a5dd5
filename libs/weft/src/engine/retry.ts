import { InvalidArgumentError, isNonRetryable } from '../common/errors.js';
import { parseDuration } from '../common/duration.js';
import type { RetryPolicy } from '../common/types.js';

export interface ResolvedRetry {
  maxAttempts: number;
  initialMs: number;
  coefficient: number;
  maxMs: number;
  nonRetryable: Set<string>;
  /** retry.maxElapsed in ms; undefined: attempts are bounded by count only. */
  maxElapsedMs?: number;
}

/**
 * Rides out an outage of a step's dependency as long as the claim TTL the engine itself rides out
 * (15 s: the waits before the 6th attempt add up to 15.5 to 31 s with the jitter), and gives up
 * on a fault that stays within about half a minute (docs/decisions/0012-default-step-retry.md).
 */
export const DEFAULT_RETRY = {
  maxAttempts: 6,
  initialInterval: '1s',
  backoffCoefficient: 2,
  maxInterval: '30s',
} as const satisfies RetryPolicy;

let defaultResolved: ResolvedRetry | undefined;

export function resolveRetry(policy: RetryPolicy | undefined): ResolvedRetry {
  // Most steps take the default: resolved once (ResolvedRetry is never mutated).
  if (policy === undefined) return (defaultResolved ??= resolvePolicy(DEFAULT_RETRY));
  return resolvePolicy(policy);
}

function resolvePolicy(policy: RetryPolicy): ResolvedRetry {
  const p = { ...DEFAULT_RETRY, ...policy };
  const maxAttempts = p.maxAttempts ?? DEFAULT_RETRY.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new InvalidArgumentError('retry.maxAttempts', `must be an integer >= 1 (got ${maxAttempts})`);
  }
  const coefficient = p.backoffCoefficient ?? DEFAULT_RETRY.backoffCoefficient;
  if (!(coefficient >= 1)) throw new InvalidArgumentError('retry.backoffCoefficient', `must be >= 1 (got ${coefficient})`);
  return {
    maxAttempts,
    initialMs: parseDuration(p.initialInterval ?? DEFAULT_RETRY.initialInterval, 'retry.initialInterval'),
    coefficient,
    maxMs: parseDuration(p.maxInterval ?? DEFAULT_RETRY.maxInterval, 'retry.maxInterval'),
    nonRetryable: new Set(p.nonRetryable ?? []),
    maxElapsedMs: p.maxElapsed === undefined ? undefined : positive(parseDuration(p.maxElapsed, 'retry.maxElapsed'), 'retry.maxElapsed'),
  };
}

/**
 * Delay before attempt `attempt + 1` after `attempt` failed: exponential, capped, with "equal
 * jitter" (half fixed, half random) so synchronized failures spread out but never retry at once.
 */
export function backoffDelay(r: ResolvedRetry, attempt: number, random: () => number = Math.random): number {
  const exp = Math.min(r.maxMs, r.initialMs * Math.pow(r.coefficient, attempt - 1));
  return exp / 2 + random() * (exp / 2);
}

function positive(ms: number, option: string): number {
  if (ms <= 0) throw new InvalidArgumentError(option, `must be longer than 0 ms (got ${ms})`);
  return ms;
}

/** The error fails its step now: its name is in retry.nonRetryable, or it is a NonRetryableError (or an ApplicationError so marked). */
export function stopsRetrying(r: ResolvedRetry, error: unknown): boolean {
  return isNonRetryable(error) || r.nonRetryable.has((error as { name?: string } | null)?.name ?? 'Error');
}
