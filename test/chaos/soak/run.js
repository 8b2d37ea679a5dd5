#!/usr/bin/env node
// npm run chaos:soak: the soak profile as a plain node script (not part of npm test).
//   CHAOS_WORKFLOWS (default 10000), CHAOS_SEED, CHAOS_MAX_ACTIVE, CHAOS_MAX_RUN_MS, CHAOS_KEEP_CLUSTER=1
//   --profile small        runs the small (npm run test:chaos) profile outside jest instead
//   --profile lease-small  the small profile under ownership 'lease' (also part of npm run test:chaos)
//   --profile lease        the soak under ownership 'lease' (CHAOS_WORKFLOWS default 3000)
// Prints the JSON summary on stdout (progress on stderr); exits 1 when any invariant was violated.
const fs = require('node:fs');
const path = require('node:path');
const { transformSync } = require('@swc/core');

// Loads the harness's TypeScript directly (the harness imports no decorators and no @weft/nest).
require.extensions['.ts'] = (module, filename) => {
  const { code } = transformSync(fs.readFileSync(filename, 'utf8'), {
    filename,
    swcrc: false,
    configFile: false,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};

const { runChaos } = require(path.join(__dirname, '..', 'harness.ts'));
const { PROFILES } = require(path.join(__dirname, '..', 'profiles.ts'));

async function main() {
  const which = process.argv.includes('--profile') ? process.argv[process.argv.indexOf('--profile') + 1] : 'soak';
  if (!PROFILES[which]) throw new Error(`unknown profile ${which} (one of ${Object.keys(PROFILES).join(', ')})`);
  const profile = PROFILES[which]();
  const summary = await runChaos(profile, { keepCluster: process.env.CHAOS_KEEP_CLUSTER === '1' });
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
  process.exitCode = summary.violations.total === 0 ? 0 : 1;
}

main().catch((err) => {
  process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
  process.exit(2);
});
