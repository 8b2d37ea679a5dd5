// bench/queue-statements: the database's side of bench/queues.ts's workload, statement by statement,
// from pg_stat_statements: per variant (no queue at 50 in flight, a queue at concurrency 50, a
// partitioned one with 100 keys at 2 each), the server's execution and planning time, WAL records and
// bytes and shared buffers touched per workflow, in total and for the statements that cost most.
// Nested statements (a function's) are listed when the server tracks them
// (pg_stat_statements.track = 'all'); planning when pg_stat_statements.track_planning is on.
// Not a ratio bench: execution time is wall time in the server, so it grows with CPU contention;
// WAL and buffer figures do not. Two warm-up chunks of a variant, then BENCH_ROUNDS (5) chunks of it,
// autovacuum's rules applied after each chunk as bench/queues.ts does. Needs the server to load
// pg_stat_statements (shared_preload_libraries); says so and exits otherwise.
// node --import ./test/support/register-ts.js bench/queue-statements.ts [N=1000 per chunk]
import pg from 'pg';
import { queueBenchEngine, queueChunk, type QueueVariant } from './queue-workload.js';
import { autovacuumLike, autovacuumOff, round, withFreshDatabase } from './support.js';

interface StatementRow {
  query: string;
  calls: number;
  exec_ms: number;
  plans: number;
  plan_ms: number;
  wal_records: number;
  wal_bytes: number;
  hits: number;
  toplevel: boolean;
}

/** `toplevel`: false for a statement a function or trigger ran (PostgreSQL 14+; on 13 every row reads as top-level). */
const statements = (toplevel: string) => `
  SELECT ${toplevel} AS toplevel, regexp_replace(s.query, '\\s+', ' ', 'g') AS query, s.calls::float8 AS calls, s.total_exec_time AS exec_ms,
         s.plans::float8 AS plans, s.total_plan_time AS plan_ms, s.wal_records::float8 AS wal_records,
         s.wal_bytes::float8 AS wal_bytes, s.shared_blks_hit::float8 AS hits
  FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
  WHERE d.datname = $1 AND s.query NOT LIKE '%pg_stat_statements%'`;

async function main() {
  const n = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
  const variants = (process.env.BENCH_ONLY ?? 'plain,fifty,parts').split(',') as QueueVariant[];
  await withFreshDatabase(async (url, name) => {
    const admin = new pg.Client({ connectionString: url });
    admin.on('error', () => undefined);
    await admin.connect();
    try {
      await admin.query('CREATE EXTENSION IF NOT EXISTS pg_stat_statements');
      await admin.query('SELECT pg_stat_statements_reset()');
    } catch (err) {
      process.stderr.write(
        `pg_stat_statements is not loaded by this server (${(err as Error).message}).\n` +
          "Add it to shared_preload_libraries, restart, and set pg_stat_statements.track = 'all' for a function's statements.\n",
      );
      await admin.end();
      process.exitCode = 2;
      return;
    }
    const setting = async (s: string) => (await admin.query<{ v: string }>(`SELECT current_setting($1, true) AS v`, [s])).rows[0]!.v;
    const tracking = {
      track: await setting('pg_stat_statements.track'),
      trackPlanning: await setting('pg_stat_statements.track_planning'),
    };
    const vacuumed = await autovacuumOff(admin);
    const engine = await queueBenchEngine(url);
    const tally: Record<string, number> = {};
    const afterChunk = () => (vacuumed ? autovacuumLike(admin, tally) : Promise.resolve());
    const out: Record<string, unknown> = {};
    try {
      for (const v of variants) {
        for (let i = 0; i < 2; i++) {
          await queueChunk(engine, n, v);
          await afterChunk();
        }
        await admin.query('SELECT pg_stat_statements_reset()');
        let rate = 0;
        for (let i = 0; i < rounds; i++) {
          rate += await queueChunk(engine, n, v);
          await afterChunk();
        }
        const read = (toplevel: string) => admin.query<StatementRow>(statements(toplevel), [name]);
        const all = await read('s.toplevel').catch(() => read('true'));
        const rows = all.rows.filter((r) => !/^(VACUUM|ANALYZE)\b/.test(r.query));
        const wfs = rounds * n;
        const per = (x: number, digits = 1) => round(x / wfs, digits);
        const sum = (f: (r: StatementRow) => number) => rows.reduce((a, r) => a + f(r), 0);
        rows.sort((a, b) => b.exec_ms + b.plan_ms - (a.exec_ms + a.plan_ms));
        out[v] = {
          wfPerSec: round(rate / rounds, 0),
          // Nested statements are counted inside their caller's time as well: the totals are the top-level ones'.
          perWorkflow: {
            execUs: per(sum((r) => (r.toplevel ? r.exec_ms * 1000 : 0))),
            walRecords: per(
              sum((r) => (r.toplevel ? r.wal_records : 0)),
              2,
            ),
            walBytes: per(
              sum((r) => (r.toplevel ? r.wal_bytes : 0)),
              0,
            ),
            sharedHits: per(sum((r) => (r.toplevel ? r.hits : 0))),
          },
          statements: rows.slice(0, 10).map((r) => ({
            query: `${r.toplevel ? '' : '(nested) '}${r.query.slice(0, 110)}`,
            callsPerWf: per(r.calls, 3),
            execUsPerWf: per(r.exec_ms * 1000),
            planUsPerWf: per(r.plan_ms * 1000),
            plans: r.plans,
            walRecordsPerWf: per(r.wal_records, 2),
            sharedHitsPerWf: per(r.hits),
          })),
        };
      }
    } finally {
      await engine.dispose();
      await admin.end();
    }
    const report = { bench: 'queue-statements', at: new Date().toISOString(), workflowsPerChunk: n, rounds, tracking, ...out };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  });
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
