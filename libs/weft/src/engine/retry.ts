import { InvalidArgumentError } from '../common/errors.js';
import { parseDuration } from '../common/duration.js';
import type { RetryPolicy } from '../common/types.js';

export interface ResolvedRetry {
  maxAttempts: number;
  initialMs: number;
  coefficient: number;
  maxMs: number;
  nonRetryable: Set<string>;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, initialInterval: '100ms', backoffCoefficient: 2, maxInterval: '30s' };

let defaultResolved: ResolvedRetry | undefined;

export function resolveRetry(policy: RetryPolicy | undefined): ResolvedRetry {
  // Most steps take the default: resolved once (ResolvedRetry is never mutated).
  if (policy === undefined) return (defaultResolved ??= resolvePolicy(DEFAULT_RETRY));
  return resolvePolicy(policy);
}

function resolvePolicy(policy: RetryPolicy): ResolvedRetry {
  const p = { ...DEFAULT_RETRY, ...policy };
  const maxAttempts = p.maxAttempts ?? 3;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new InvalidArgumentError('retry.maxAttempts', `must be an integer >= 1 (got ${maxAttempts})`);
  }
  const coefficient = p.backoffCoefficient ?? 2;
  if (!(coefficient >= 1)) throw new InvalidArgumentError('retry.backoffCoefficient', `must be >= 1 (got ${coefficient})`);
  return {
    maxAttempts,
    initialMs: parseDuration(p.initialInterval ?? 100, 'retry.initialInterval'),
    coefficient,
    maxMs: parseDuration(p.maxInterval ?? '30s', 'retry.maxInterval'),
    nonRetryable: new Set(p.nonRetryable ?? []),
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
