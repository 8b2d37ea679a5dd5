import { InvalidConfigurationError } from '../common/errors.js';
import { Duration, parseDuration } from '../common/duration.js';

export type OwnershipMode = 'none' | 'lease' | 'workflow-lease';

export const WORKFLOW_CLAIM_TTL_SAFETY_MULTIPLIER = 3;
export const TAKEOVER_GRACE_MULTIPLIER = 2;
export const WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS = 5;

export interface OwnershipOptions {
  ownership?: OwnershipMode;
  workflowClaimTtl?: Duration;
  workflowClaimRenewInterval?: Duration;
  leaseTtl?: Duration;
  leaseRenewInterval?: Duration;
  leaseWaitTimeout?: Duration;
  /** Most workflows one engine holds at once under 'workflow-lease' (default 10,000). */
  maxConcurrentWorkflows?: number;
}

/** The ownership options resolved to milliseconds (WorkflowClaimRegistry.config). */
export interface OwnershipConfig {
  mode: OwnershipMode;
  ttlMs: number;
  renewMs: number;
  graceMs: number;
  leaseWaitMs: number;
  maxConcurrent: number;
}

const MODES: OwnershipMode[] = ['none', 'lease', 'workflow-lease'];

/** A duration option; a bad value names the option (InvalidConfigurationError). */
function durationOption(value: Duration, option: string): number {
  try {
    return parseDuration(value, option);
  } catch {
    throw new InvalidConfigurationError(option, `must be non-negative milliseconds or a string like '15s' (got ${JSON.stringify(value)})`);
  }
}

function pair(ttl: Duration | undefined, renew: Duration | undefined, names: [string, string]): { ttlMs: number; renewMs: number } {
  const ttlMs = durationOption(ttl ?? '15s', names[0]);
  const renewMs = durationOption(renew ?? '3s', names[1]);
  if (renewMs <= 0) throw new InvalidConfigurationError(names[1], `must be greater than 0 (got ${renewMs} ms)`);
  if (!(renewMs < ttlMs)) {
    throw new InvalidConfigurationError(names[1], `must be less than ${names[0]} (got ${names[1]}=${renewMs} ms, ${names[0]}=${ttlMs} ms)`);
  }
  if (ttlMs < WORKFLOW_CLAIM_TTL_SAFETY_MULTIPLIER * renewMs) {
    throw new InvalidConfigurationError(
      names[0],
      `must be at least ${WORKFLOW_CLAIM_TTL_SAFETY_MULTIPLIER} x ${names[1]} (got ${names[0]}=${ttlMs} ms, ${names[1]}=${renewMs} ms)`,
    );
  }
  return { ttlMs, renewMs };
}

/** Validates the selected mode's timings only; the other mode's options are ignored. */
export function resolveOwnership(o: OwnershipOptions): OwnershipConfig {
  const mode = o.ownership ?? 'none';
  if (!MODES.includes(mode))
    throw new InvalidConfigurationError('ownership', `must be one of ${MODES.join(', ')} (got ${JSON.stringify(mode)})`);
  const maxConcurrent = o.maxConcurrentWorkflows ?? 10_000;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new InvalidConfigurationError('maxConcurrentWorkflows', `must be a positive integer (got ${maxConcurrent})`);
  }
  let t = { ttlMs: 15_000, renewMs: 3_000 };
  let leaseWaitMs = 0;
  if (mode === 'workflow-lease')
    t = pair(o.workflowClaimTtl, o.workflowClaimRenewInterval, ['workflowClaimTtl', 'workflowClaimRenewInterval']);
  if (mode === 'lease') {
    t = pair(o.leaseTtl, o.leaseRenewInterval, ['leaseTtl', 'leaseRenewInterval']);
    leaseWaitMs = durationOption(o.leaseWaitTimeout ?? t.ttlMs + TAKEOVER_GRACE_MULTIPLIER * t.renewMs + 5_000, 'leaseWaitTimeout');
  }
  return { mode, ...t, graceMs: TAKEOVER_GRACE_MULTIPLIER * t.renewMs, leaseWaitMs, maxConcurrent };
}
