// npm run bench:ab -- <other checkout>: this checkout's engine against another's (a worktree of
// an older commit: `git worktree add /tmp/base <commit>`), in one process per run, chunks
// interleaved (bench/throughput.ts with BENCH_AB_BASE). Runs it BENCH_AB_RUNS times (default 3)
// and prints, per mode, shape and level, the median over the runs of current ÷ base steps/s and
// each variant's median steps/s. A ratio ≥ 0.95 is "within 5 % or faster".
//   BENCH_AB_WORKFLOWS (default 3000), BENCH_LEVELS, BENCH_MODES, BENCH_MIXED as for throughput.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { median } from './report.js';

const HERE = import.meta.dirname;
const REGISTER = path.join(HERE, '..', 'test', 'support', 'register-ts.js');
const base = process.argv[2];
if (!base || !fs.existsSync(path.join(base, 'libs', 'weft', 'src', 'index.ts'))) {
  process.stderr.write('usage: npm run bench:ab -- <path of another checkout of this repository>\n');
  process.exit(2);
}
const runs = Number(process.env.BENCH_AB_RUNS ?? 3);
const workflows = process.env.BENCH_AB_WORKFLOWS ?? '3000';

const perRun = [];
for (let r = 0; r < runs; r++) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--enable-source-maps', '--import', REGISTER, path.join(HERE, 'throughput.ts'), workflows],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_AB_BASE: base }, maxBuffer: 64 << 20 },
  );
  perRun.push(JSON.parse(out));
  process.stderr.write(`ab: run ${r + 1}/${runs} done\n`);
}

const key = (row) => `${row.mode} ${row.shape} ${row.inFlight}`;
const rows = new Map();
for (const run of perRun) {
  const byVariant = { current: new Map(), base: new Map() };
  for (const row of run.results) byVariant[row.variant].set(key(row), row.stepsPerSec);
  for (const [k, cur] of byVariant.current) {
    const b = byVariant.base.get(k);
    const entry = rows.get(k) ?? { current: [], base: [], ratio: [] };
    entry.current.push(cur);
    entry.base.push(b);
    entry.ratio.push(cur / b);
    rows.set(k, entry);
  }
}
const r2 = (n) => Math.round(n * 100) / 100;
const table = [...rows].map(([k, e]) => {
  const [mode, shape, inFlight] = k.split(' ');
  return {
    mode,
    shape,
    inFlight: Number(inFlight),
    currentStepsPerSec: Math.round(median(e.current)),
    baseStepsPerSec: Math.round(median(e.base)),
    ratioMedian: r2(median(e.ratio)),
    ratios: e.ratio.map(r2),
  };
});
process.stdout.write(
  `${JSON.stringify({ bench: 'ab', base: path.resolve(base), runs, workflows: Number(workflows), at: new Date().toISOString(), table }, null, 2)}\n`,
);
