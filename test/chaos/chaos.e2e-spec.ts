// npm run test:chaos (also part of npm test): the small chaos profile. 3 engine processes on a
// private PostgreSQL cluster, ~240 workflows of mixed shapes, every fault kind at least once;
// asserts zero invariant violations. The JSON summary is printed and written to test/chaos/results/.
import { FAULT_KINDS } from './faults';
import { runChaos } from './harness';
import { smallProfile } from './profiles';

jest.setTimeout(300_000);

describe('chaos (small profile)', () => {
  it('every workflow reaches its expected end under SIGKILL, SIGSTOP and PostgreSQL restarts, with no invariant violated', async () => {
    const profile = smallProfile();
    const summary = await runChaos(profile, { log: (m) => process.stderr.write(`[chaos] ${m}\n`) });
    process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);

    for (const kind of FAULT_KINDS) expect(summary.faults.injected[kind] ?? 0).toBeGreaterThanOrEqual(1);
    expect({ seed: summary.seed, violations: summary.violations }).toEqual({
      seed: summary.seed,
      violations: { total: 0, byKind: {}, samples: {} },
    });
    expect(summary.workflows.byStatus).toEqual({ completed: summary.workflows.planned });
  });
});
