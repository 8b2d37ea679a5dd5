// npm run bench: runs every benchmark 3 times (BENCH_RUNS), prints their JSON, writes
// bench/results/<date>.json, the tables between the bench markers in docs/performance.md and
// the chart docs/images/throughput.svg.
//
// Around every throughput run it measures the ceiling (bench/ceiling.js: pgbench, one-row
// INSERT, 1 and 16 clients, before and after), and turns the figures into ratios taken in that
// run: steps/s ÷ ceiling TPS at the same client count (64 in flight is divided by the 16-client
// ceiling), and p50 at 1 in flight ÷ the floor of four serial commits (4 ÷ 1-client TPS).
//
//   BENCH_RUNS=1 BENCH_WORKFLOWS=500 BENCH_ONLY=throughput npm run bench     # a quick run
//   BENCH_ONLY: comma-separated bench names; the others' tables are kept from the newest
//   bench/results/*.json that has them (with that file's date).
//   BENCH_RENDER=bench/results/<file>.json: no runs, only the tables and the chart from that file.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openCeiling } from './ceiling.js';
import { chart, median, otherTables, targetsTable, throughputTables } from './report.js';

const HERE = import.meta.dirname;
const ROOT = path.join(HERE, '..');
const REGISTER = path.join(ROOT, 'test', 'support', 'register-ts.js');

const runs = Number(process.env.BENCH_RUNS ?? 3);
const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined;
const benches = [
  // 6,000 per level: chunks of 1,500 per mode at 16 and 64 in flight (about a second each). With
  // 2,000 a chunk lasted 0.3 s and lease ÷ none read 0.985, 0.764, 0.815 in one run (docs/performance.md).
  ['throughput', 'throughput.ts', [process.env.BENCH_WORKFLOWS ?? '6000']],
  // Where a workflow's p50 goes: its round trips, Node between them, reference statements.
  ['latency', 'latency.ts', [process.env.BENCH_LATENCY ?? '1000']],
  // The same p50 with client and server pinned to one core, two, or neither (the scheduler's pick moves it by half).
  ['placement', 'placement.ts', [process.env.BENCH_PLACEMENT ?? '1000']],
  ['parked-heap', 'parked-heap.ts', [process.env.BENCH_PARKED ?? '100000']],
  ['renewal', 'renewal.ts', []],
  // A queue at concurrency 50 and a partitioned one (100 keys) against 50 in flight without a queue; handoff latency at 1,000 queued.
  ['queues', 'queues.ts', [process.env.BENCH_QUEUES ?? '1000']],
  ['signal-latency', 'signal-latency.ts', []],
  // How late a durable timer fires on its owner (local timers; the 1 s poll is the backstop): 1 and 1,000 parked.
  ['timer-lateness', 'timer-lateness.ts', [process.env.BENCH_TIMER_TRIALS ?? '20', process.env.BENCH_TIMER_PARKED ?? '1000']],
  // The two scale targets: 1,000,000 ended workflows in the tables, a fresh engine recovering 100,000.
  ['scale-rows', 'scale-rows.ts', [process.env.BENCH_SCALE_ROWS ?? '1000000']],
  ['recovery', 'recovery.ts', [process.env.BENCH_RECOVERY ?? '100000']],
  // Issue #35: a 3-step workflow inserting one application row per step, transactional steps ÷ plain at 1, 16 and 64 in flight.
  ['transactions', 'transactions.ts', [process.env.BENCH_TRANSACTIONS ?? '4800']],
  // Issue #40: list by attribute on 1,000,000 workflows, and the hot path with attributes set at start ÷ without.
  ['attributes', 'attributes.ts', [process.env.BENCH_ATTRIBUTE_ROWS ?? '1000000', process.env.BENCH_ATTRIBUTE_WORKFLOWS ?? '2000']],
  // Issue #41: the 3-step workflow with AesGcmCodec on ÷ off at 16 in flight, and one payload's encode + decode.
  ['codec', 'codec.ts', [process.env.BENCH_CODEC_WORKFLOWS ?? '1500']],
  // Issue #38: 1,000 steps heartbeating every 100 ms ÷ the same steps without heartbeats, and the writes per heartbeat.
  ['heartbeats', 'heartbeats.ts', [process.env.BENCH_HEARTBEAT_STEPS ?? '1000']],
  // Issue #37: getEvent wake-up and stream write-to-read, one engine and two processes, ÷ a bare NOTIFY; 10,000 entries to 10 SSE clients.
  ['talk-latency', 'talk-latency.ts', [process.env.BENCH_TALK_TRIALS ?? '300', process.env.BENCH_TALK_SSE_ENTRIES ?? '10000', '10']],
];

function runOne(file, args) {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--enable-source-maps', '--import', REGISTER, path.join(HERE, file), ...args],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 * 1024 * 1024 },
  );
  process.stdout.write(out);
  return JSON.parse(out);
}

const r2 = (n, d = 2) => (n === undefined ? undefined : Math.round(n * 10 ** d) / 10 ** d);

/** Flattens a result to { "path.to.number": value } so runs can be combined key by key. */
function flatten(obj, prefix = '', out = {}) {
  if (typeof obj === 'number') out[prefix] = obj;
  else if (Array.isArray(obj)) obj.forEach((v, i) => flatten(v, `${prefix}[${i}]`, out));
  else if (obj && typeof obj === 'object') for (const [k, v] of Object.entries(obj)) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  return out;
}

function mediansOf(all) {
  const flat = all.map((r) => flatten(r));
  const med = {};
  for (const key of Object.keys(flat[0])) {
    if (/^machine|\bat$/.test(key)) continue;
    med[key] = median(flat.map((f) => f[key]));
  }
  return med;
}

/** Adds the ceiling and the ratios of one run to its throughput result (in place). */
function withRatios(result, before, after, nodeCommits = []) {
  const tps = {};
  for (const c of [1, 16]) tps[c] = (before.find((b) => b.clients === c).tps + after.find((a) => a.clients === c).tps) / 2;
  const floorMs = (4 / tps[1]) * 1000;
  // Four serial commits from node-pg: what the same workflow costs with nothing of the engine's.
  const nodeFloorMs = nodeCommits.length ? (4 * nodeCommits.reduce((a, n) => a + n.p50Ms, 0)) / nodeCommits.length : undefined;
  result.ceiling = {
    before,
    after,
    tps1: tps[1],
    tps16: tps[16],
    fourCommitFloorMs: r2(floorMs, 3),
    nodeCommits,
    fourNodeCommitsMs: nodeFloorMs === undefined ? undefined : r2(nodeFloorMs, 3),
  };
  for (const row of result.results) {
    row.ceilingTps = tps[row.inFlight === 1 ? 1 : 16];
    row.ofCeiling = r2(row.stepsPerSec / row.ceilingTps, 3);
    if (row.inFlight === 1 && row.shape === 'noop3') {
      row.p50OverFloor = r2(row.p50Ms / floorMs, 2);
      if (nodeFloorMs !== undefined) row.p50OverNodeFloor = r2(row.p50Ms / nodeFloorMs, 2);
    }
  }
  result.leaseOverNone = [];
  for (const lease of result.results.filter((r) => r.mode === 'workflow-lease')) {
    const none = result.results.find((r) => r.mode === 'none' && r.shape === lease.shape && r.inFlight === lease.inFlight);
    if (none)
      result.leaseOverNone.push({
        shape: lease.shape,
        inFlight: lease.inFlight,
        workflowsPerSec: r2(lease.workflowsPerSec / none.workflowsPerSec, 3),
      });
  }
  return result;
}

function runThroughput(file, args) {
  return async () => {
    const ceiling = await openCeiling();
    try {
      const before = [ceiling.measure(1), ceiling.measure(16)];
      const nodeBefore = await ceiling.nodeCommit();
      const result = runOne(file, args);
      const after = [ceiling.measure(1), ceiling.measure(16)];
      const nodeAfter = await ceiling.nodeCommit();
      process.stderr.write(
        `ceiling before ${JSON.stringify(before)} ${JSON.stringify(nodeBefore)} after ${JSON.stringify(after)} ${JSON.stringify(nodeAfter)}\n`,
      );
      return withRatios(result, before, after, [nodeBefore, nodeAfter]);
    } finally {
      await ceiling.drop();
    }
  };
}

const date = new Date().toISOString().slice(0, 10);
const dir = path.join(HERE, 'results');

/** The newest earlier entry of a bench, for a run that skipped it (BENCH_ONLY). */
function previous(name) {
  if (!fs.existsSync(dir)) return undefined;
  for (const f of fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .reverse()) {
    try {
      const entry = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')).find((e) => e.bench === name);
      if (entry) return { ...entry, from: entry.from ?? f.replace(/\.json$/, '') };
    } catch {
      // a file of another format: skip it
    }
  }
  return undefined;
}

const command = [
  process.env.BENCH_RUNS && `BENCH_RUNS=${process.env.BENCH_RUNS}`,
  process.env.BENCH_WORKFLOWS && `BENCH_WORKFLOWS=${process.env.BENCH_WORKFLOWS}`,
  process.env.BENCH_ONLY && `BENCH_ONLY=${process.env.BENCH_ONLY}`,
  'npm run bench',
]
  .filter(Boolean)
  .join(' ');

// BENCH_RENDER=<results file>: only regenerate the tables and the chart from a results file.
const render = process.env.BENCH_RENDER;
const results = render ? JSON.parse(fs.readFileSync(render, 'utf8')) : [];
for (const [name, file, args] of render ? [] : benches) {
  if (!fs.existsSync(path.join(HERE, file))) continue;
  if (only && !only.has(name)) {
    const prev = previous(name);
    if (prev) results.push(prev);
    continue;
  }
  const one = name === 'throughput' ? runThroughput(file, args) : async () => runOne(file, args);
  const all = [];
  for (let i = 0; i < runs; i++) all.push(await one());
  results.push({ bench: all[0].bench, command, runs: all, medians: mediansOf(all) });
}

// ---------------------------------------------------------------- write everything

fs.mkdirSync(dir, { recursive: true });
const resultsFile = render ? path.resolve(render) : path.join(dir, `${date}.json`);
if (!render) fs.writeFileSync(resultsFile, `${JSON.stringify(results, null, 2)}\n`);

const byName = Object.fromEntries(results.map((r) => [r.bench, r]));
const shown = byName.throughput ?? results[0];
const measuredOn = shown?.runs?.[0]?.at?.slice(0, 10) ?? date;
// The header names the machine of the run it dates (the results record theirs); a table taken on
// another machine says so in its heading.
const here = { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model ?? 'CPU', memGiB: os.totalmem() / 2 ** 30, node: process.version };
const machineOf = (entry) => entry?.runs?.[0]?.machine ?? here;
const headerMachine = machineOf(shown);
const rendered = results.map((r) =>
  machineOf(r).cpuModel === headerMachine.cpuModel ? r : { ...r, machineNote: `${machineOf(r).cpus} × ${machineOf(r).cpuModel}` },
);
const lines = [
  `Measured ${measuredOn} on ${headerMachine.cpus} × ${headerMachine.cpuModel}, ${Math.round(headerMachine.memGiB)} GiB, Node ${headerMachine.node}, ` +
    `PostgreSQL on 127.0.0.1 (${process.env.BENCH_DATABASE_URL ? 'BENCH_DATABASE_URL' : 'the local server'}); medians of ${shown?.runs?.length ?? runs} runs. ` +
    `Command: \`${shown?.command ?? command}\`.`,
  '',
  ...targetsTable(byName),
  ...(byName.throughput ? throughputTables(byName.throughput) : []),
  ...rendered.filter((r) => r.bench !== 'throughput').flatMap(otherTables),
];
const doc = path.join(ROOT, 'docs', 'performance.md');
const current = fs.existsSync(doc) ? fs.readFileSync(doc, 'utf8') : '';
const begin = '<!-- bench:begin -->';
const end = '<!-- bench:end -->';
const block = `${begin}\n\n${lines.join('\n')}\n${end}`;
const next = current.includes(begin) ? current.replace(new RegExp(`${begin}[\\s\\S]*${end}`), () => block) : `${current}\n${block}\n`;
fs.writeFileSync(doc, next);
const svg = path.join(ROOT, 'docs', 'images', 'throughput.svg');
if (byName.throughput && !byName.throughput.from) {
  fs.mkdirSync(path.dirname(svg), { recursive: true });
  fs.writeFileSync(svg, chart(byName.throughput, date));
}
// The repository's formatter keeps `npm run lint` (prettier --check .) green on what we wrote.
try {
  execFileSync(path.join(ROOT, 'node_modules', '.bin', 'prettier'), ['--write', doc, resultsFile], { stdio: 'ignore' });
} catch {
  // no prettier installed: the files are still valid, only not aligned
}
process.stderr.write(`wrote ${path.relative(ROOT, resultsFile)}, docs/performance.md and docs/images/throughput.svg\n`);
