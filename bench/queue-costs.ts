// bench/queue-costs: where a queued workflow's cost goes, per workflow and variant (the variants of
// bench/queues.ts: no queue at 50 in flight, a queue at concurrency 50, a partitioned one with 100
// keys, 2 per key). Prints, per variant, wf/s, this process's CPU and the CPU of the database's
// backends serving the engine (from /proc: a local PostgreSQL on Linux, readable by this user;
// otherwise 0), round trips and commits, and the statements sent by label. A warm-up chunk of each
// variant first, then BENCH_ROUNDS (3) chunks of each variant in turn (BENCH_ONLY: a comma list of
// plain, fifty, parts). Not a ratio bench: figures of one variant at a time, for a profile.
// node --import ./test/support/register-ts.js bench/queue-costs.ts [N=1000 per chunk]
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { WeftEngine } from '@weft/nest';
import { queueChunk, type QueueVariant } from './queue-workload.js';
import { round, silent, StatementCounter, ThreeNoops, withFreshDatabase } from './support.js';

type Variant = QueueVariant;
const counter = new StatementCounter(true).install();

/** CPU time (µs) the processes have used, from /proc/<pid>/stat (utime + stime, in 10 ms ticks). */
function cpuMicros(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // not local, or not readable: counts nothing
    }
  }
  return ticks * 10_000;
}

async function main() {
  const n = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const only = (process.env.BENCH_ONLY ?? 'plain,fifty,parts').split(',') as Variant[];
  await withFreshDatabase(async (url, name) => {
    const engine = await WeftEngine.create({
      database: { url, poolSize: 20 },
      schema: 'weft',
      logger: silent,
      ownership: 'workflow-lease',
      queues: { fifty: { concurrency: 50 }, parts: { concurrency: 50, partition: { concurrency: 2 } } },
    });
    engine.register('noop3', ThreeNoops);
    await engine.bootstrap();
    const admin = new pg.Client({ connectionString: url });
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      for (const v of ['plain', 'fifty', 'parts'] as const) await queueChunk(engine, n, v);
      for (const v of only) {
        const q = 'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()';
        const backends = async () => (await admin.query<{ pid: number }>(q, [name])).rows.map((r) => r.pid);
        const before = await backends();
        // Per backend: a backend opened meanwhile counts from 0; one closed meanwhile is lost (`backendsGone`).
        const startCpu = new Map(before.map((pid) => [pid, cpuMicros([pid])]));
        const [texts, trips, commits, cpu] = [counter.texts(name), counter.roundTrips(name), counter.commits(name), process.cpuUsage()];
        let rate = 0;
        for (let i = 0; i < rounds; i++) rate += await queueChunk(engine, n, v);
        const used = process.cpuUsage(cpu);
        const after = await backends();
        const pgCpu = after.reduce((sum, pid) => sum + cpuMicros([pid]) - (startCpu.get(pid) ?? 0), 0);
        const gone = before.filter((pid) => !after.includes(pid)).length;
        const wfs = rounds * n;
        const sent = new Map<string, number>();
        counter.addSince(sent, name, texts);
        const out = {
          variant: v,
          wfPerSec: round(rate / rounds, 0),
          engineCpuUsPerWf: round((used.user + used.system) / wfs, 1),
          databaseCpuUsPerWf: round(pgCpu / wfs, 1),
          backendsGone: gone,
          roundTripsPerWf: round((counter.roundTrips(name) - trips) / wfs, 3),
          commitsPerWf: round((counter.commits(name) - commits) / wfs, 3),
          statementsPerWf: StatementCounter.perWorkflow(sent, wfs),
        };
        process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      }
    } finally {
      await admin.end();
      await engine.dispose();
    }
  });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
