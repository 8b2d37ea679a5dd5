import { InvalidConfigurationError } from '../common/errors.js';
import type { Duration } from '../common/duration.js';
import { resolveOwnership } from './config.js';

describe('ownership configuration rules', () => {
  it('defaults to none with claim TTL 15s and renew 3s', () => {
    expect(resolveOwnership({})).toMatchObject({ mode: 'none' });
    expect(resolveOwnership({ ownership: 'workflow-lease' })).toMatchObject({ ttlMs: 15_000, renewMs: 3_000, graceMs: 6_000 });
  });

  it.each([
    [{ ownership: 'workflow-lease', workflowClaimTtl: '3s', workflowClaimRenewInterval: '3s' }, 'workflowClaimRenewInterval'],
    [{ ownership: 'workflow-lease', workflowClaimTtl: '5s', workflowClaimRenewInterval: '2s' }, 'workflowClaimTtl'],
    [{ ownership: 'workflow-lease', workflowClaimRenewInterval: 0 }, 'workflowClaimRenewInterval'],
    [{ ownership: 'lease', leaseTtl: '1s', leaseRenewInterval: '2s' }, 'leaseRenewInterval'],
    [{ ownership: 'lease', leaseTtl: '2s', leaseRenewInterval: '1s' }, 'leaseTtl'],
    [{ ownership: 'lease', leaseWaitTimeout: -1 }, 'leaseWaitTimeout'],
    [{ ownership: 'sometimes' }, 'ownership'],
    [{ maxConcurrentWorkflows: 0 }, 'maxConcurrentWorkflows'],
  ])('refuses %j naming %s', (opts, option) => {
    let err: unknown;
    try {
      resolveOwnership(opts as never);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(InvalidConfigurationError);
    expect((err as InvalidConfigurationError).option).toBe(option);
    expect((err as Error).message).toMatch(/\d+ ms|got/);
  });

  it('ignores the timings of a mode that is not selected', () => {
    expect(() => resolveOwnership({ ownership: 'lease', workflowClaimTtl: '1s', workflowClaimRenewInterval: '5s' })).not.toThrow();
    expect(() => resolveOwnership({ ownership: 'workflow-lease', leaseTtl: '1s', leaseRenewInterval: '5s' })).not.toThrow();
    expect(() => resolveOwnership({ ownership: 'none', workflowClaimTtl: 'bogus' as Duration })).not.toThrow();
  });

  it('accepts ttl exactly 3 x renew', () => {
    expect(resolveOwnership({ ownership: 'workflow-lease', workflowClaimTtl: 900, workflowClaimRenewInterval: 300 }).ttlMs).toBe(900);
  });
});
