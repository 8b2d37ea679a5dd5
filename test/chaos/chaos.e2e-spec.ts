// npm run test:chaos (also part of npm test): the small chaos profiles. 3 engine processes on a
// private PostgreSQL cluster, a few hundred workflows of mixed shapes, every fault kind at least
// once (SIGKILL, graceful SIGTERM, SIGSTOP, PostgreSQL restarts); asserts zero invariant
// violations. Once under ownership 'workflow-lease', once under 'lease'. The JSON summaries are
// printed and written to test/chaos/results/.
import { runChaos } from './harness.js';
import { ChaosProfile, leaseSmallProfile, smallProfile } from './profiles.js';

// Above the small profiles' run cap (480 s) plus checks and shutdown: a loaded machine is slow, not wrong.
vi.setConfig({ testTimeout: 600_000, hookTimeout: 600_000 });

async function runAndCheck(profile: ChaosProfile): Promise<void> {
  const summary = await runChaos(profile, { log: (m) => process.stderr.write(`[chaos ${profile.name}] ${m}\n`) });
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);

  for (const kind of new Set(profile.faults.map((f) => f.kind))) expect(summary.faults.injected[kind] ?? 0).toBeGreaterThanOrEqual(1);
  // Every fault hit a live workload (the last starts wait for the faults), whatever the machine's speed.
  expect(summary.faults.afterWorkloadEnded).toBe(0);
  expect({ seed: summary.seed, violations: summary.violations }).toEqual({
    seed: summary.seed,
    violations: { total: 0, byKind: {}, samples: {} },
  });
  const { completed = 0, cancelled = 0, ...others } = summary.workflows.byStatus;
  expect({ completedOrCancelled: completed + cancelled, others }).toEqual({ completedOrCancelled: summary.workflows.planned, others: {} });
}

describe('chaos (small profiles)', () => {
  it('workflow-lease: every workflow reaches its expected end under SIGKILL, SIGTERM, SIGSTOP and PostgreSQL restarts, with no invariant violated', async () => {
    await runAndCheck(smallProfile());
  });

  it('lease: the same workload with one lease holder and two standbys, with no invariant violated', async () => {
    await runAndCheck(leaseSmallProfile());
  });
});
