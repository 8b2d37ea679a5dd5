// bench/throughput: N workflows of 3 no-op steps at 1, 16 and 64 in flight. Prints JSON.
// node --import ./test/support/register-ts.js bench/throughput.ts [N]   (BENCH_OWNERSHIP, BENCH_LEVELS)
import { WeftEngine } from '@weft/nest';
import { adminUrl, machine, percentile, round, silent, ThreeNoops, withFreshDatabase, xactCommits } from './support.js';

async function runLevel(engine: WeftEngine, url: string, db: string, total: number, inFlight: number) {
  // Warm-up so connection setup and JIT do not count.
  await Promise.all(Array.from({ length: Math.min(50, total) }, (_, n) => engine.start('noop3', { n }).then((h) => h.result())));
  const latencies: number[] = [];
  const commitsBefore = await xactCommits(url, db);
  const statementsBefore = engine.commitStatements;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const n = next++;
      const s = performance.now();
      const h = await engine.start('noop3', { n });
      await h.result();
      latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  const elapsedS = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const commits = (await xactCommits(url, db)) - commitsBefore;
  latencies.sort((a, b) => a - b);
  return {
    inFlight,
    workflows: total,
    workflowsPerSec: round(total / elapsedS, 1),
    stepsPerSec: round((3 * total) / elapsedS, 1),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    cpuMsPerWorkflow: round((cpu.user + cpu.system) / 1000 / total, 3),
    commitsPerWorkflow: round(commits / total, 2),
    advanceStatementsPerWorkflow: round((engine.commitStatements - statementsBefore) / total, 2),
  };
}

async function main() {
  const total = Number(process.argv[2] ?? 2000);
  const results = await withFreshDatabase(async (url, db) => {
    // BENCH_OWNERSHIP=workflow-lease measures the fenced per-workflow claims (one engine).
    const ownership = (process.env.BENCH_OWNERSHIP ?? 'none') as 'none' | 'workflow-lease';
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership });
    engine.register('noop3', ThreeNoops);
    await engine.bootstrap();
    const out = [];
    const levels = (process.env.BENCH_LEVELS ?? '1,16,64').split(',').map(Number);
    for (const level of levels) out.push(await runLevel(engine, url, db, level === 1 ? Math.min(total, 1000) : total, level));
    await engine.dispose();
    return out;
  });
  const server = new URL(adminUrl());
  process.stdout.write(
    `${JSON.stringify({ bench: 'throughput', at: new Date().toISOString(), machine: machine(), database: `${server.hostname}:${server.port || 5432}`, results }, null, 2)}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
