// The harness's view of an engine let go after a SIGSTOP (faults.ts afterStop): a 'ready' or
// 'lease-lost' line read while the engine was marked stopped must not be lost.
import { afterStop } from './faults.js';

describe('chaos harness: engine state after a SIGSTOP', () => {
  const seen = (readyAt: number | null, leaseLostAt: number | null) => ({ readyAt, leaseLostAt });

  it('a standby whose ready line came while it was stopped is the lease holder: ready', () => {
    expect(afterStop(seen(1_000, null), 'standby')).toBe('ready');
  });

  it('a holder whose lease-lost line came while it was stopped is deposed: halted', () => {
    expect(afterStop(seen(1_000, 2_000), 'ready')).toBe('halted');
  });

  it('otherwise it goes back to what it was', () => {
    expect(afterStop(seen(null, null), 'standby')).toBe('standby');
    expect(afterStop(seen(1_000, null), 'ready')).toBe('ready');
    expect(afterStop(seen(1_000, 2_000), 'halted')).toBe('halted');
  });
});
