// bench/queue-costs: where a queued workflow's cost goes, per workflow and variant (the variants of
// bench/queues.ts: no queue at 50 in flight, a queue at concurrency 50, a partitioned one with 100
// keys, 2 per key). Prints, per variant, wf/s, this process's CPU and the CPU of the database's
// backends serving the engine (from /proc: a local PostgreSQL on Linux, readable by this user;
// otherwise 0), round trips and commits, and the statements sent by label. A warm-up chunk of each
// variant first, then BENCH_ROUNDS (3) chunks of each variant in turn (BENCH_ONLY: a comma list of
// plain, fifty, parts). Not a ratio bench: figures of one variant at a time, for a profile.
// `admissionCalls`: the calls of weft_queue_admit per chunk, those that admitted nothing, their
// round trip as the engine waited for it (p50, p90 ms) and the server's time per call
// (pg_stat_user_functions, track_functions = 'pl' set on the bench's database).
// node --import ./test/support/register-ts.js bench/queue-costs.ts [N=1000 per chunk]
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { queueBenchEngine, queueChunk, type QueueVariant } from './queue-workload.js';
import { round, StatementCounter, withFreshDatabase } from './support.js';

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
    const setup = new pg.Client({ connectionString: url });
    setup.on('error', () => undefined);
    await setup.connect();
    await setup.query(`ALTER DATABASE "${name}" SET track_functions = 'pl'`);
    await setup.end();
    const engine = await queueBenchEngine(url);
    // Each admission call, timed as the engine waits for it.
    const calls: { ms: number; admitted: number }[] = [];
    const queues = engine.store.queues;
    const admit = queues.admit.bind(queues);
    queues.admit = async (r) => {
      const t0 = performance.now();
      const res = await admit(r);
      calls.push({ ms: performance.now() - t0, admitted: res.admitted.length });
      return res;
    };
    const fnStat =
      'SELECT coalesce(sum(calls), 0)::float8 AS calls, coalesce(sum(total_time), 0)::float8 AS ms FROM pg_stat_user_functions WHERE funcname = $1';
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
        await admin.query('SELECT pg_stat_clear_snapshot()');
        const fnBefore = (await admin.query<{ calls: number; ms: number }>(fnStat, ['weft_queue_admit'])).rows[0]!;
        calls.length = 0;
        const [texts, trips, commits, cpu] = [counter.texts(name), counter.roundTrips(name), counter.commits(name), process.cpuUsage()];
        let rate = 0;
        for (let i = 0; i < rounds; i++) rate += await queueChunk(engine, n, v);
        const used = process.cpuUsage(cpu);
        const after = await backends();
        const pgCpu = after.reduce((sum, pid) => sum + cpuMicros([pid]) - (startCpu.get(pid) ?? 0), 0);
        const gone = before.filter((pid) => !after.includes(pid)).length;
        const wfs = rounds * n;
        const [tripsAfter, commitsAfter] = [counter.roundTrips(name), counter.commits(name)];
        const sent = new Map<string, number>();
        counter.addSince(sent, name, texts);
        // Backends report their function figures about once a second: the ratio holds, not the sums.
        await new Promise((r) => setTimeout(r, 1500));
        await admin.query('SELECT pg_stat_clear_snapshot()');
        const fnAfter = (await admin.query<{ calls: number; ms: number }>(fnStat, ['weft_queue_admit'])).rows[0]!;
        const ms = calls.map((c) => c.ms).sort((a, b) => a - b);
        const at = (p: number) => (ms.length ? round(ms[Math.min(ms.length - 1, Math.floor((ms.length * p) / 100))]!, 2) : 0);
        const out = {
          variant: v,
          wfPerSec: round(rate / rounds, 0),
          engineCpuUsPerWf: round((used.user + used.system) / wfs, 1),
          databaseCpuUsPerWf: round(pgCpu / wfs, 1),
          backendsGone: gone,
          roundTripsPerWf: round((tripsAfter - trips) / wfs, 3),
          commitsPerWf: round((commitsAfter - commits) / wfs, 3),
          statementsPerWf: StatementCounter.perWorkflow(sent, wfs),
          admissionCalls: {
            perChunk: round(calls.length / rounds, 1),
            admittingNothingPerChunk: round(calls.filter((c) => c.admitted === 0).length / rounds, 1),
            roundTripMs: { p50: at(50), p90: at(90) },
            serverMsPerCall:
              calls.length && fnAfter.calls > fnBefore.calls
                ? round((fnAfter.ms - fnBefore.ms) / (fnAfter.calls - fnBefore.calls), 2)
                : null,
          },
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
