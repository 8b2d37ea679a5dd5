// npm run bench: runs every benchmark 3 times (BENCH_RUNS), prints their JSON, writes
// bench/results/<date>.json and the median table in docs/performance.md.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const HERE = import.meta.dirname;
const REGISTER = path.join(HERE, '..', 'test', 'support', 'register-ts.js');

const runs = Number(process.env.BENCH_RUNS ?? 3);
const benches = [
  ['throughput.ts', [process.env.BENCH_WORKFLOWS ?? '2000']],
  ['parked-heap.ts', [process.env.BENCH_PARKED ?? '100000']],
  ['renewal.ts', []],
  ['signal-latency.ts', []],
];

function runOne(file, args) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--enable-source-maps', '--import', REGISTER, path.join(HERE, file), ...args],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  process.stdout.write(out);
  return JSON.parse(out);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Flattens a result to { "path.to.number": value } so runs can be combined key by key. */
function flatten(obj, prefix = '', out = {}) {
  if (typeof obj === 'number') out[prefix] = obj;
  else if (Array.isArray(obj)) obj.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  else if (obj && typeof obj === 'object') for (const [k, v] of Object.entries(obj)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

const results = [];
for (const [file, args] of benches) {
  if (!fs.existsSync(path.join(HERE, file))) continue;
  const all = Array.from({ length: runs }, () => runOne(file, args));
  const flat = all.map((r) => flatten(r));
  const med = {};
  for (const key of Object.keys(flat[0])) {
    if (/^machine|\bat$/.test(key)) continue;
    med[key] = median(flat.map((f) => f[key]).filter((v) => typeof v === 'number'));
  }
  results.push({ bench: all[0].bench, runs: all, medians: med });
}

const date = new Date().toISOString().slice(0, 10);
const dir = path.join(HERE, 'results');
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(path.join(dir, `${date}.json`), `${JSON.stringify(results, null, 2)}\n`);

const cpu = os.cpus();
const rows = results.flatMap((r) => Object.entries(r.medians).map(([k, v]) => `| ${r.bench} | ${k} | ${v} |`));
const table = [
  `Measured ${date} on ${cpu.length} × ${cpu[0]?.model ?? 'CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, `,
  `PostgreSQL on 127.0.0.1 (${process.env.BENCH_DATABASE_URL ? 'BENCH_DATABASE_URL' : 'the local server'}); medians of ${runs} runs.`,
  '',
  '| bench | figure | median |',
  '|---|---|---|',
  ...rows,
].join('\n');
const doc = path.join(HERE, '..', 'docs', 'performance.md');
const current = fs.existsSync(doc) ? fs.readFileSync(doc, 'utf8') : '';
const begin = '<!-- bench:begin -->';
const end = '<!-- bench:end -->';
const block = `${begin}\n${table}\n${end}`;
const next = current.includes(begin) ? current.replace(new RegExp(`${begin}[\\s\\S]*${end}`), block) : `${current}\n${block}\n`;
fs.writeFileSync(doc, next);
process.stderr.write(`wrote bench/results/${date}.json and docs/performance.md\n`);
