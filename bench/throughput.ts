// bench/throughput: N workflows of 3 no-op steps at 1, 16 and 64 in flight, in both ownership
// modes (`none`, `workflow-lease`) in one process run, plus a mixed shape (a step, a short
// sleep, a signal the bench answers, a child, a step) at 16 in flight. Prints JSON.
// node --import ./test/support/register-ts.js bench/throughput.ts [N]
//   BENCH_LEVELS=1,16,64  BENCH_MODES=none,workflow-lease  BENCH_MIXED=<N of mixed, 0 = skip>
//
// Each mode has its own database and engine, created side by side; every level runs in chunks
// (BENCH_CHUNKS, default 4) that alternate between the modes (none, lease, lease, none, ...), so
// that the machine's drift hits both alike and `workflow-lease ÷ none` is a ratio taken in one
// window. BENCH_STATEMENTS=1 lists the statements per workflow by text; BENCH_CPU_PROFILE=<dir>
// writes a CPU profile of every chunk. Before the levels each engine runs BENCH_WARMUP (default
// 6,000) workflows at 16 in flight on its empty tables; their throughput is in `warmUp`.
//
// BENCH_AB_BASE=<another checkout> (a worktree of an older commit): an A/B in one process. Every
// mode then has three engines: this checkout's, the other's library (loaded from its source) and a
// control, a second engine of this checkout's library, so the same run measures A/A beside A/B
// (BENCH_AB_CONTROL=0 leaves it out). Rows carry `variant` ('current', 'base' or 'control') and
// every chunk's steps/s; the chunks rotate the engines' order (below). bench/ab.js runs it several
// times and prints, per level, the median of the chunk-by-chunk ratios.
import { WeftEngine } from '@weft/nest';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { WorkflowContext } from '@weft/nest';
import { adminUrl, machine, p50Ms, percentile, round, silent, StatementCounter, ThreeNoops, withFreshDatabase } from './support.js';

type Mode = 'none' | 'workflow-lease';
type Shape = 'noop3' | 'mixed';

const MIXED_SLEEP_MS = 5;
// BENCH_STATEMENTS=1 adds, per level, the statements sent per workflow by text.
const listStatements = process.env.BENCH_STATEMENTS === '1';
const counter = new StatementCounter(listStatements).install();
// BENCH_CPU_PROFILE=<dir>: a V8 CPU profile of every measured level (not its warm-up), taken in
// this process, so both modes' profiles come from one window: <dir>/<mode>-<shape>-<inFlight>-<n>.cpuprofile.
const profileDir = process.env.BENCH_CPU_PROFILE;
let profiles = 0;
let inspector: Session | undefined;
async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (!profileDir) return fn();
  if (!inspector) {
    inspector = new Session();
    inspector.connect();
    await inspector.post('Profiler.enable');
    await inspector.post('Profiler.setSamplingInterval', { interval: 250 });
  }
  await inspector.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await inspector.post('Profiler.stop');
    fs.mkdirSync(profileDir, { recursive: true });
    fs.writeFileSync(path.join(profileDir, `${name}-${++profiles}.cpuprofile`), JSON.stringify(profile));
  }
}

/** The mixed shape: a step, a short sleep, a signal wait (the bench answers it), a child, a step. */
export class Mixed {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => input.n);
    await ctx.sleep(MIXED_SLEEP_MS);
    const go = await ctx.waitForSignal<{ n: number }>('go', { timeout: 60_000 });
    const child = await ctx.executeChild<number>('noop1', { n: a });
    return ctx.step('b', () => child + (go?.n ?? 0));
  }
}

export class OneNoop {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('a', () => input.n);
  }
}

type Variant = 'current' | 'base' | 'control';
type EngineClass = typeof WeftEngine;

interface Target {
  mode: Mode;
  variant: Variant;
  url: string;
  db: string;
  engine: WeftEngine;
}

/** One workflow start to result; the mixed shape also gets its signal from here. */
async function one(engine: WeftEngine, shape: Shape, n: number): Promise<void> {
  const h = await engine.start(shape, { n });
  if (shape === 'mixed') await engine.signal(h.workflowId, 'go', { n });
  await h.result({ timeout: '60s' });
}

/** What one chunk of a level measured, summed over the chunks of the level. */
interface Tally {
  workflows: number;
  elapsedMs: number;
  cpuMs: number;
  commits: number;
  advanceStatements: number;
  latencies: number[];
  /** p50 of each chunk, in the order they ran: how much the machine moved within the level. */
  chunkP50s: number[];
  /** Steps/s of each chunk, in order: bench/ab.js pairs them with the other variants' chunks. */
  chunkStepsPerSec: number[];
  /** This process's CPU ms per workflow in each chunk: on a busy machine, steadier than steps/s. */
  chunkCpuMsPerWorkflow: number[];
  texts: Map<string, number>;
}

const emptyTally = (): Tally => ({
  workflows: 0,
  elapsedMs: 0,
  cpuMs: 0,
  commits: 0,
  advanceStatements: 0,
  latencies: [],
  chunkP50s: [],
  chunkStepsPerSec: [],
  chunkCpuMsPerWorkflow: [],
  texts: new Map(),
});

/** Runs `total` workflows at `inFlight` and adds what it measured to `tally`. */
async function runChunk(t: Target, shape: Shape, total: number, inFlight: number, tally: Tally): Promise<void> {
  const { engine } = t;
  const commitsBefore = counter.commits(t.db);
  const textsBefore = counter.texts(t.db);
  const statementsBefore = engine.commitStatements;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const latencies: number[] = [];
  const worker = async () => {
    while (next < total) {
      const n = next++;
      const s = performance.now();
      await one(engine, shape, n);
      latencies.push(performance.now() - s);
    }
  };
  await profiled(`${t.mode}-${shape}-${inFlight}`, () => Promise.all(Array.from({ length: inFlight }, worker)));
  const elapsedMs = performance.now() - t0;
  tally.elapsedMs += elapsedMs;
  tally.chunkStepsPerSec.push(round((3 * total * 1000) / elapsedMs, 1));
  tally.latencies.push(...latencies);
  tally.chunkP50s.push(p50Ms(latencies));
  const cpu = process.cpuUsage(cpu0);
  tally.cpuMs += (cpu.user + cpu.system) / 1000;
  tally.chunkCpuMsPerWorkflow.push(round((cpu.user + cpu.system) / 1000 / total, 4));
  tally.commits += counter.commits(t.db) - commitsBefore;
  tally.advanceStatements += engine.commitStatements - statementsBefore;
  tally.workflows += total;
  counter.addSince(tally.texts, t.db, textsBefore);
}

const WARM_UP_CHUNK = 1500;

/** One engine's warm-up: workflows/s of each chunk, in order (the last one may be shorter). */
interface WarmUp {
  mode: Mode;
  variant?: Variant;
  workflows: number;
  workflowsPerChunk: number;
  workflowsPerSec: number[];
}

/**
 * The warm-up before the measured levels, itself measured: `total` workflows per engine at 16 in
 * flight on the empty tables, in chunks of WARM_UP_CHUNK that alternate between the engines.
 * An engine on empty tables is slower for its first few thousand workflows: V8 is still compiling
 * the hot path, and each time a young table doubles, every connection plans its statements again
 * (docs/decisions/0009). The levels are measured after it, on tables a service in use has; the
 * chunks' figures show the way there (docs/performance.md, "Method").
 */
async function measuredWarmUp(targets: Target[], total: number): Promise<WarmUp[]> {
  const out = targets.map((t): WarmUp => ({
    mode: t.mode,
    ...(abBase ? { variant: t.variant } : {}),
    workflows: total,
    workflowsPerChunk: WARM_UP_CHUNK,
    workflowsPerSec: [],
  }));
  for (let done = 0; done < total; done += WARM_UP_CHUNK) {
    const n = Math.min(WARM_UP_CHUNK, total - done);
    for (const [i, t] of targets.entries()) {
      const tally = emptyTally();
      await runChunk(t, 'noop3', n, 16, tally);
      out[i].workflowsPerSec.push(round((n / tally.elapsedMs) * 1000, 0));
    }
  }
  return out;
}

/** Warm-up so connection setup, JIT and the first plans do not count. */
async function warmUp(t: Target, shape: Shape, n: number): Promise<void> {
  await Promise.all(Array.from({ length: n }, (_, i) => one(t.engine, shape, -1 - i)));
}

function row(t: Target, shape: Shape, inFlight: number, chunks: number, tally: Tally) {
  const total = tally.workflows;
  const elapsedS = tally.elapsedMs / 1000;
  const statements = listStatements ? StatementCounter.perWorkflow(tally.texts, total) : {};
  const latencies = [...tally.latencies].sort((a, b) => a - b);
  // Steps per workflow: noop3 has 3; mixed has 2 and its child 1.
  const steps = 3;
  return {
    mode: t.mode,
    ...(abBase ? { variant: t.variant } : {}),
    shape,
    inFlight,
    workflows: total,
    chunks,
    workflowsPerSec: round(total / elapsedS, 1),
    stepsPerSec: round((steps * total) / elapsedS, 1),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    chunkP50Ms: tally.chunkP50s,
    chunkStepsPerSec: tally.chunkStepsPerSec,
    chunkCpuMsPerWorkflow: tally.chunkCpuMsPerWorkflow,
    cpuMsPerWorkflow: round(tally.cpuMs / total, 3),
    commitsPerWorkflow: round(tally.commits / total, 2),
    advanceStatementsPerWorkflow: round(tally.advanceStatements / total, 2),
    ...(listStatements ? { statements } : {}),
  };
}

/**
 * The engines' order in chunk `c`: rotated by `c` and reversed on odd chunks, so that over the
 * chunks every engine runs in every position (with two engines: ABBA). A fixed order would put the
 * same engine always after the same neighbour's garbage and connections; with three engines a mere
 * reversal would keep the middle one in the middle.
 */
function chunkOrder<T>(items: T[], c: number): T[] {
  const k = c % items.length;
  const rotated = [...items.slice(k), ...items.slice(0, k)];
  return c % 2 === 0 ? rotated : rotated.reverse();
}

/**
 * One level in every mode: `total` workflows per mode, in `chunks` chunks whose order changes
 * (chunkOrder), so that a minute in which the machine is slower hits every engine alike.
 */
async function runLevel(targets: Target[], shape: Shape, total: number, inFlight: number, chunks: number) {
  const tallies = targets.map(() => emptyTally());
  for (const t of targets) await warmUp(t, shape, Math.min(50, total));
  const per = Math.max(1, Math.floor(total / chunks));
  for (let c = 0; c < chunks; c++) {
    const n = c === chunks - 1 ? total - per * (chunks - 1) : per;
    const order = chunkOrder(
      targets.map((t, i) => [t, i] as const),
      c,
    );
    for (const [t, i] of order) await runChunk(t, shape, n, inFlight, tallies[i]);
  }
  return targets.map((t, i) => row(t, shape, inFlight, chunks, tallies[i]));
}

const abBase = process.env.BENCH_AB_BASE;

/** The engine class of a variant: this checkout's, or the BENCH_AB_BASE checkout's library source. */
async function engineClass(variant: Variant): Promise<EngineClass> {
  if (variant !== 'base' || !abBase) return WeftEngine;
  const entry = path.resolve(abBase, 'libs', 'weft', 'src', 'index.ts');
  const lib = (await import(pathToFileURL(entry).href)) as { WeftEngine: EngineClass };
  return lib.WeftEngine;
}

async function withEngine<T>(mode: Mode, variant: Variant, fn: (t: Target) => Promise<T>): Promise<T> {
  const Engine = await engineClass(variant);
  return withFreshDatabase(async (url, db) => {
    // workflow-lease: the fenced per-workflow claims of a multi-engine deploy (one engine here).
    const engine = await Engine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership: mode });
    engine.register('noop3', ThreeNoops);
    engine.register('mixed', Mixed);
    engine.register('noop1', OneNoop);
    await engine.bootstrap();
    try {
      return await fn({ mode, variant, url, db, engine });
    } finally {
      await engine.dispose();
    }
  });
}

async function main() {
  const total = Number(process.argv[2] ?? 6000);
  const levels = (process.env.BENCH_LEVELS ?? '1,16,64').split(',').map(Number);
  const modeList = (process.env.BENCH_MODES ?? 'none,workflow-lease').split(',') as Mode[];
  const variants: Variant[] = !abBase
    ? ['current']
    : process.env.BENCH_AB_CONTROL === '0'
      ? ['current', 'base']
      : ['current', 'base', 'control'];
  const modes = modeList.flatMap((mode) => variants.map((variant) => ({ mode, variant })));
  const mixedTotal = Number(process.env.BENCH_MIXED ?? Math.min(500, Math.max(50, Math.round(total / 4))));
  // Chunks per level that alternate between the modes (BENCH_CHUNKS, default 4).
  const chunks = Math.max(1, Number(process.env.BENCH_CHUNKS ?? 4));
  // Workflows each engine runs at 16 in flight before the first figure counts (BENCH_WARMUP).
  const warmUpTotal = Math.max(WARM_UP_CHUNK, Number(process.env.BENCH_WARMUP ?? 6000));
  const results: ReturnType<typeof row>[] = [];
  let warmUpChunks: WarmUp[] = [];
  const nest = (i: number, targets: Target[]): Promise<void> =>
    i < modes.length
      ? withEngine(modes[i].mode, modes[i].variant, (t) => nest(i + 1, [...targets, t]))
      : (async () => {
          warmUpChunks = await measuredWarmUp(targets, warmUpTotal);
          for (const level of levels)
            results.push(...(await runLevel(targets, 'noop3', level === 1 ? Math.min(total, 1000) : total, level, chunks)));
          if (mixedTotal > 0) results.push(...(await runLevel(targets, 'mixed', mixedTotal, 16, chunks)));
        })();
  await nest(0, []);
  const server = new URL(adminUrl());
  process.stdout.write(
    `${JSON.stringify({ bench: 'throughput', ...(abBase ? { abBase: path.resolve(abBase) } : {}), at: new Date().toISOString(), machine: machine(), database: `${server.hostname}:${server.port || 5432}`, warmUp: warmUpChunks, results }, null, 2)}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
