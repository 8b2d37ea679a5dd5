#!/usr/bin/env node
// The package's `weft` bin (package.json "bin"): `npx weft <command> ...`; see docs/cli.md.
import { runCli } from './run.js';

// exitCode, not process.exit(): piped stdout is flushed before the process ends.
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  env: process.env,
});
