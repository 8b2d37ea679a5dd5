// npm run bench:ab -- <other checkout>: this checkout's engine against another's (a worktree of
// an older commit: `git worktree add /tmp/base <commit>`), in one process per run (bench/throughput.ts
// with BENCH_AB_BASE). Every run also has a control, a second engine of this checkout: its figures
// against this checkout's are an A/A, the noise floor of the same run. Runs it BENCH_AB_RUNS times
// (default 3) and prints, per mode, shape and level:
//   - ratio: the median over every chunk of every run of current ÷ base, each chunk against the
//     other variant's chunk of the same round (they ran seconds apart, so the machine's drift
//     cancels), with its interquartile range;
//   - aa: the same for control ÷ current; `settled` says whether the A/A lies within ±2 %, i.e.
//     whether the run can tell a 5 % difference at all;
//   - cpu, cpuAa: the same pairs for this process's CPU time per workflow, base ÷ current (above 1:
//     current costs less). On a busy machine wall-clock throughput swings with the neighbours while
//     CPU per workflow barely moves, so these settle where `ratio` cannot.
//   BENCH_AB_WORKFLOWS (default 6000), BENCH_CHUNKS (default 12), BENCH_LEVELS, BENCH_MODES,
//   BENCH_MIXED as for throughput; BENCH_AB_CONTROL=0 leaves the control out.
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
const workflows = process.env.BENCH_AB_WORKFLOWS ?? '6000';
const chunks = process.env.BENCH_CHUNKS ?? '12';

const perRun = [];
for (let r = 0; r < runs; r++) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--enable-source-maps', '--import', REGISTER, path.join(HERE, 'throughput.ts'), workflows],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, BENCH_AB_BASE: base, BENCH_CHUNKS: chunks },
      maxBuffer: 64 << 20,
    },
  );
  perRun.push(JSON.parse(out));
  process.stderr.write(`ab: run ${r + 1}/${runs} done\n`);
}

/** The p-th percentile (0..100) of the finite numbers in xs, by nearest rank. */
const pct = (xs, p) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return v.length === 0 ? undefined : v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))];
};
const r3 = (n) => (n === undefined ? undefined : Math.round(n * 1000) / 1000);
/** Chunk-by-chunk ratios of a ÷ b (the same round of the same run pairs them). */
const paired = (a, b) => a.chunkStepsPerSec.map((x, i) => x / b.chunkStepsPerSec[i]);
/** The same for CPU per workflow, inverted (b ÷ a) so that above 1 still means a is better. */
const pairedCpu = (a, b) => a.chunkCpuMsPerWorkflow.map((x, i) => b.chunkCpuMsPerWorkflow[i] / x);

const key = (row) => `${row.mode} ${row.shape} ${row.inFlight}`;
const rows = new Map();
for (const run of perRun) {
  const byVariant = { current: new Map(), base: new Map(), control: new Map() };
  for (const row of run.results) byVariant[row.variant].set(key(row), row);
  for (const [k, cur] of byVariant.current) {
    const b = byVariant.base.get(k);
    const ctl = byVariant.control.get(k);
    const entry = rows.get(k) ?? { current: [], base: [], ratios: [], aa: [], cpu: [], cpuAa: [] };
    entry.current.push(cur.stepsPerSec);
    entry.base.push(b.stepsPerSec);
    entry.ratios.push(...paired(cur, b));
    entry.cpu.push(...pairedCpu(cur, b));
    if (ctl) entry.aa.push(...paired(ctl, cur));
    if (ctl) entry.cpuAa.push(...pairedCpu(ctl, cur));
    rows.set(k, entry);
  }
}
const table = [...rows].map(([k, e]) => {
  const [mode, shape, inFlight] = k.split(' ');
  const aa = e.aa.length > 0 ? r3(pct(e.aa, 50)) : undefined;
  return {
    mode,
    shape,
    inFlight: Number(inFlight),
    currentStepsPerSec: Math.round(median(e.current)),
    baseStepsPerSec: Math.round(median(e.base)),
    ratio: r3(pct(e.ratios, 50)),
    ratioIqr: [r3(pct(e.ratios, 25)), r3(pct(e.ratios, 75))],
    ...(aa === undefined ? {} : { aa, aaIqr: [r3(pct(e.aa, 25)), r3(pct(e.aa, 75))], settled: Math.abs(aa - 1) <= 0.02 }),
    cpu: r3(pct(e.cpu, 50)),
    cpuIqr: [r3(pct(e.cpu, 25)), r3(pct(e.cpu, 75))],
    ...(e.cpuAa.length > 0 ? { cpuAa: r3(pct(e.cpuAa, 50)), cpuAaIqr: [r3(pct(e.cpuAa, 25)), r3(pct(e.cpuAa, 75))] } : {}),
    pairs: e.ratios.length,
  };
});
process.stdout.write(
  `${JSON.stringify({ bench: 'ab', base: path.resolve(base), runs, workflows: Number(workflows), chunks: Number(chunks), at: new Date().toISOString(), table }, null, 2)}\n`,
);
