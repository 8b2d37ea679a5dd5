// bench/placement: p50 at 1 in flight by where the kernel runs the engine's process and the
// PostgreSQL backends that serve it. At 1 in flight every round trip hands the CPU from Node to
// the backend and back; on a 2-core machine the scheduler sometimes runs both on one core, and
// the engine's p50 then moves by half while pgbench's floor does not (docs/performance.md,
// "Method"). Measures, for each placement (client and server on one core, on two, unpinned):
// pgbench's 1-client floor, and 3 no-op steps at 1 in flight in both modes, in chunks that
// alternate between the modes. Needs a local server and `taskset` (util-linux) with the right to
// pin its processes; prints { skipped } otherwise. Every affinity is restored at the end.
// node --import ./test/support/register-ts.js bench/placement.ts [workflows per mode and placement]
import { WeftEngine } from '@weft/nest';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import pg from 'pg';
import { openCeiling } from './ceiling.js';
import { machine, p50Ms, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

type Mode = 'none' | 'workflow-lease';
const MODES: Mode[] = ['none', 'workflow-lease'];
const ALL = `0-${os.cpus().length - 1}`;
const PLACEMENTS = [
  { placement: 'one core', clientCpus: '0', serverCpus: '0' },
  { placement: 'two cores', clientCpus: '0', serverCpus: '1' },
  { placement: 'unpinned', clientCpus: ALL, serverCpus: ALL },
];
const CHUNKS = 4;

/** Pins every thread of `pid` to `cpus` (taskset's list). */
const pin = (pid: number, cpus: string) => void execFileSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });

/** The postmaster of the server at `url`, if it runs on this machine: new backends inherit its affinity. */
async function localPostmaster(url: string): Promise<number | string> {
  const host = new URL(url).hostname;
  if (!['127.0.0.1', 'localhost', '::1', '[::1]'].includes(host)) return `the server is not local (${host})`;
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const { rows } = await c.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const stat = fs.readFileSync(`/proc/${rows[0].pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    pin(ppid, ALL); // can we? (and start from no pinning)
    return ppid;
  } catch (err) {
    return `cannot pin the server's processes: ${(err as Error).message.split('\n')[0]}`;
  } finally {
    await c.end();
  }
}

interface Target {
  mode: Mode;
  db: string;
  engine: WeftEngine;
  latencies: number[];
  chunkP50Ms: number[];
}

async function oneWorkflow(engine: WeftEngine, n: number): Promise<void> {
  const h = await engine.start('noop3', { n });
  await h.result({ timeout: '60s' });
}

async function chunk(t: Target, n: number): Promise<void> {
  const lat: number[] = [];
  for (let i = 0; i < n; i++) {
    const s = performance.now();
    await oneWorkflow(t.engine, i);
    lat.push(performance.now() - s);
  }
  t.latencies.push(...lat);
  t.chunkP50Ms.push(p50Ms(lat));
}

/** The backends of the engines' databases (the pools and the renewal connections, all open after the warm-up). */
async function backends(admin: pg.Client, dbs: string[]): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)', [dbs]);
  return rows.map((r) => r.pid);
}

/** An engine per mode, each on a fresh database, open while `fn` runs. */
function withEngines<T>(fn: (targets: Target[]) => Promise<T>, open: Target[] = []): Promise<T> {
  if (open.length === MODES.length) return fn(open);
  const mode = MODES[open.length];
  return withFreshDatabase(async (url, db) => {
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership: mode });
    engine.register('noop3', ThreeNoops);
    await engine.bootstrap();
    try {
      return await withEngines(fn, [...open, { mode, db, engine, latencies: [], chunkP50Ms: [] }]);
    } finally {
      await engine.dispose();
    }
  });
}

async function warmUp(t: Target): Promise<void> {
  // JIT, plans and the pool at 16 in flight, then one after another.
  let next = 0;
  const worker = async () => {
    while (next < 3000) await oneWorkflow(t.engine, next++);
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  for (let i = 0; i < 300; i++) await oneWorkflow(t.engine, i);
}

async function measure(url: string, postmaster: number, perMode: number) {
  const admin = new pg.Client({ connectionString: url });
  admin.on('error', () => undefined);
  await admin.connect();
  const ceiling = await openCeiling();
  try {
    return await withEngines(async (targets) => {
      for (const t of targets) await warmUp(t);
      const dbs = targets.map((t) => t.db);
      const engineBackends = await backends(admin, dbs);
      try {
        const out = [];
        for (const p of PLACEMENTS) {
          pin(process.pid, p.clientCpus);
          pin(postmaster, p.serverCpus); // pgbench's backend is forked with this
          for (const pid of engineBackends) pin(pid, p.serverCpus);
          for (const t of targets) {
            t.latencies = [];
            t.chunkP50Ms = [];
          }
          const before = ceiling.measure(1, p.clientCpus);
          const per = Math.floor(perMode / CHUNKS);
          for (let c = 0; c < CHUNKS; c++) for (const t of c % 2 === 0 ? targets : [...targets].reverse()) await chunk(t, per);
          const after = ceiling.measure(1, p.clientCpus);
          const floorMs = (4 / ((before.tps + after.tps) / 2)) * 1000;
          out.push({
            ...p,
            pgbenchTps: [before.tps, after.tps],
            fourCommitFloorMs: round(floorMs, 3),
            modes: targets.map((t) => {
              const p50 = percentile(
                t.latencies.sort((a, b) => a - b),
                50,
              );
              return {
                mode: t.mode,
                workflows: t.latencies.length,
                p50Ms: round(p50, 3),
                p50OverFloor: round(p50 / floorMs, 2),
                chunkP50Ms: t.chunkP50Ms,
              };
            }),
          });
        }
        return out;
      } finally {
        pin(process.pid, ALL);
        pin(postmaster, ALL);
        for (const pid of await backends(admin, dbs).catch(() => [])) {
          try {
            pin(pid, ALL);
          } catch {
            // the backend is gone
          }
        }
      }
    });
  } finally {
    await ceiling.drop();
    await admin.end();
  }
}

async function main() {
  const perMode = Number(process.argv[2] ?? 1000);
  const url = process.env.BENCH_DATABASE_URL ?? process.env.WEFT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const base = { bench: 'placement', at: new Date().toISOString(), machine: machine() };
  const postmaster = os.cpus().length < 2 ? 'one CPU: nothing to place' : await localPostmaster(url);
  const result =
    typeof postmaster === 'string' ? { ...base, skipped: postmaster } : { ...base, placements: await measure(url, postmaster, perMode) };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
