// npm run chaos:soak: the soak profile as a plain node script (not part of npm test); run with
// node --import ./test/support/register-ts.js test/chaos/soak/run.ts [--profile P].
//   CHAOS_WORKFLOWS (default 10000), CHAOS_SEED, CHAOS_MAX_ACTIVE, CHAOS_MAX_RUN_MS, CHAOS_KEEP_CLUSTER=1
//   --profile small        runs the small (npm run test:chaos) profile outside the test runner instead
//   --profile lease-small  the small profile under ownership 'lease' (also part of npm run test:chaos)
//   --profile lease        the soak under ownership 'lease' (CHAOS_WORKFLOWS default 3000)
// Prints the JSON summary on stdout (progress on stderr); exits 1 when any invariant was violated.
import { runChaos } from '../harness.js';
import { PROFILES } from '../profiles.js';

async function main(): Promise<void> {
  const which = process.argv.includes('--profile') ? process.argv[process.argv.indexOf('--profile') + 1] : 'soak';
  if (!(which in PROFILES)) throw new Error(`unknown profile ${which} (one of ${Object.keys(PROFILES).join(', ')})`);
  const profile = PROFILES[which]();
  const summary = await runChaos(profile, { keepCluster: process.env.CHAOS_KEEP_CLUSTER === '1' });
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  process.exitCode = summary.violations.total === 0 ? 0 : 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
  process.exit(2);
});
