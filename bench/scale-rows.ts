// bench/scale-rows: the 3-no-op-step workflow at 16 in flight on tables that hold N ended workflows
// (default 1,000,000) against empty tables, per ownership mode. Prints one JSON object on stdout.
// node --expose-gc --enable-source-maps --import ./test/support/register-ts.js bench/scale-rows.ts [N]
//   BENCH_WORKFLOWS=<workflows per chunk, 2000>  BENCH_CHUNKS=<chunks per database, 4>
//   BENCH_MODES=workflow-lease,none  BENCH_FILL_CHUNK=<workflows per INSERT, 100000>
//   BENCH_MESSAGE_EVERY=<every k-th ended workflow waited for a signal, 4>  BENCH_STATEMENTS=1
//   BENCH_AUTOVACUUM_LIKE=0 (no stand-in for an autovacuum that is off on the server)
//   BENCH_IDS=random (the bench passes randomUUID() ids and fills with random ids, as before the engine's
//   ids became UUIDv7: the comparison; default: the engine's own ids, and a time-ordered fill)
//
// Per mode, two databases with an engine each, side by side: "empty" and "full". Both are first
// measured while empty (the control: two like databases, so its ratio is the method's own bias),
// then "full" gets N ended workflows written by set-based SQL as the engine leaves them, VACUUM
// ANALYZE and a CHECKPOINT, and both are measured again in chunks that alternate (empty, full,
// full, empty, ...), as throughput.ts alternates modes: the machine's drift hits both alike.
// With autovacuum off on the server, its default rules are applied between chunks (autovacuumLike).
// WAL per workflow (with pg_walinspect, this database's blocks only) shows the full-page images.
import { WeftEngine } from '@weft/nest';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  adminUrl,
  autovacuumLike,
  autovacuumOff,
  machine,
  percentile,
  round,
  silent,
  StatementCounter,
  ThreeNoops,
  withFreshDatabase,
} from './support.js';

type Mode = 'none' | 'workflow-lease';
type Label = 'empty' | 'full';

const IN_FLIGHT = 16;
const listStatements = process.env.BENCH_STATEMENTS === '1';
const counter = new StatementCounter(listStatements).install();
const log = (m: string) => process.stderr.write(`[scale-rows] ${m}\n`);
/** --expose-gc: collect between chunks, so one engine's garbage is not collected in the other's chunk. */
const gc = () => (globalThis as { gc?: () => void }).gc?.();
/**
 * BENCH_IDS=random: random ids (randomUUID, what the engine generated before docs/decisions/0010)
 * for the workflows the bench starts and the ones it fills, to show what random keys cost in the
 * primary keys of a large table (every insert lands on another leaf page). Default: the engine
 * generates its UUIDv7 ids, and the filled ones are time-ordered too (their creation time first).
 */
const randomIds = process.env.BENCH_IDS === 'random';

const startOptions = () => (randomIds ? { workflowId: randomUUID() } : {});

interface Target {
  label: Label;
  mode: Mode;
  url: string;
  db: string;
  engine: WeftEngine;
  /** The bench's own connection to the database: WAL positions, pg_walinspect, maintenance. */
  probe: pg.Client;
  /** pg_walinspect is installed: WAL is counted for this database's blocks only, with its full-page images. */
  walinspect: boolean;
}

/** What the chunks of one database measured, summed. */
interface Tally {
  workflows: number;
  elapsedMs: number;
  cpuMs: number;
  commits: number;
  /** WAL and full-page images of the chunks whose WAL could still be read, and their workflows. */
  walBytes: number;
  fpis: number;
  walWorkflows: number;
  latencies: number[];
  texts: Map<string, number>;
  /** What autovacuumLike ran, by statement: how often. */
  maintenance: Record<string, number>;
}

const emptyTally = (): Tally => ({
  workflows: 0,
  elapsedMs: 0,
  cpuMs: 0,
  commits: 0,
  walBytes: 0,
  fpis: 0,
  walWorkflows: 0,
  latencies: [],
  texts: new Map(),
  maintenance: {},
});

async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const lsn = async (t: Target, fn: 'insert' | 'flush') =>
  (await t.probe.query<{ l: string }>(`SELECT pg_current_wal_${fn}_lsn()::text AS l`)).rows[0].l;

/**
 * The WAL written between two positions: with pg_walinspect, only records that touch this
 * database's blocks (the server is shared: other databases' WAL is not this chunk's), and how
 * many full-page images they carry; without it, the server's whole WAL and no image count. Null
 * when a checkpoint removed the segments meanwhile (a busy shared server can within a chunk).
 */
async function walBetween(t: Target, from: string, to: string): Promise<{ bytes: number; fpis: number | null } | null> {
  if (!t.walinspect) {
    const r = await t.probe.query<{ b: string }>('SELECT pg_wal_lsn_diff($2, $1)::text AS b', [from, to]);
    return { bytes: Number(r.rows[0].b), fpis: null };
  }
  try {
    const r = await t.probe.query<{ bytes: string; fpis: string }>(
      `SELECT COALESCE(sum(record_length), 0)::text AS bytes,
              COALESCE(sum((length(block_ref) - length(replace(block_ref, 'FPW', ''))) / 3), 0)::text AS fpis
       FROM pg_get_wal_records_info($1, $2)
       WHERE block_ref ~ ('rel [0-9]+/' || (SELECT oid FROM pg_database WHERE datname = current_database()) || '/')`,
      [from, to],
    );
    return { bytes: Number(r.rows[0].bytes), fpis: Number(r.rows[0].fpis) };
  } catch (err) {
    log(`  WAL of a ${t.label} chunk not counted: ${(err as Error).message}`);
    return null;
  }
}

/** Runs `total` workflows at 16 in flight on `t`, adds them to `tally`, returns this chunk's workflows/s. */
async function runChunk(t: Target, total: number, tally: Tally): Promise<number> {
  gc();
  const wal0 = await lsn(t, 'insert');
  const commitsBefore = counter.commits(t.db);
  const textsBefore = counter.texts(t.db);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const n = next++;
      const s = performance.now();
      await (await t.engine.start('noop3', { n }, startOptions())).result({ timeout: '60s' });
      tally.latencies.push(performance.now() - s);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  tally.commits += counter.commits(t.db) - commitsBefore;
  counter.addSince(tally.texts, t.db, textsBefore);
  // Flushed: every commit of the chunk is, and pg_walinspect reads no further than that.
  const wal = await walBetween(t, wal0, await lsn(t, 'flush'));
  if (wal) {
    tally.walBytes += wal.bytes;
    tally.fpis += wal.fpis ?? NaN;
    tally.walWorkflows += total;
  }
  tally.elapsedMs += elapsedMs;
  tally.cpuMs += (cpu.user + cpu.system) / 1000;
  tally.workflows += total;
  return total / (elapsedMs / 1000);
}

/** Warm-up, so connection setup, JIT and the first plans do not count. */
async function warmUp(t: Target, n: number): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) await (await t.engine.start('noop3', { n: -1 - next++ }, startOptions())).result({ timeout: '60s' });
    }),
  );
}

function summary(tally: Tally) {
  const total = tally.workflows;
  const latencies = [...tally.latencies].sort((a, b) => a - b);
  const statements = listStatements ? StatementCounter.perWorkflow(tally.texts, total) : {};
  return {
    workflows: total,
    wfPerSec: round(total / (tally.elapsedMs / 1000), 1),
    p50Ms: round(percentile(latencies, 50), 3),
    p99Ms: round(percentile(latencies, 99), 3),
    cpuMsPerWorkflow: round(tally.cpuMs / total, 3),
    commitsPerWorkflow: round(tally.commits / total, 2),
    walKiBPerWorkflow: tally.walWorkflows ? round(tally.walBytes / tally.walWorkflows / 1024, 2) : null,
    // Full-page images: the first change of a page after a checkpoint writes all 8 KiB of it.
    fullPageImagesPerWorkflow: tally.walWorkflows && !Number.isNaN(tally.fpis) ? round(tally.fpis / tally.walWorkflows, 2) : null,
    maintenanceBetweenChunks: tally.maintenance,
    ...(listStatements ? { statements } : {}),
  };
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * `plan.chunks` chunks of `plan.perChunk` workflows per database, in pairs that alternate their order
 * (empty, full, full, empty, ...). Each pair's full ÷ empty is taken from adjacent chunks.
 */
async function alternate(empty: Target, full: Target, plan: Plan) {
  const tallies = { empty: emptyTally(), full: emptyTally() };
  const pairRatios: number[] = [];
  for (let c = 0; c < plan.chunks; c++) {
    const rate: Partial<Record<Label, number>> = {};
    for (const t of c % 2 === 0 ? [empty, full] : [full, empty]) {
      if (plan.autovacuumLike) await autovacuumLike(t.probe, tallies[t.label].maintenance);
      rate[t.label] = await runChunk(t, plan.perChunk, tallies[t.label]);
    }
    pairRatios.push(rate.full! / rate.empty!);
    log(`  chunk ${c + 1}/${plan.chunks}: empty ${round(rate.empty!, 0)} wf/s, full ${round(rate.full!, 0)} wf/s`);
  }
  const e = summary(tallies.empty);
  const f = summary(tallies.full);
  return { empty: e, full: f, ratio: round(f.wfPerSec / e.wfPerSec, 3), pairRatios: pairRatios.map((r) => round(r, 3)) };
}

/**
 * N ended workflows as the engine leaves a completed one (see libs/weft/src/storage/repositories):
 * the row at version 4 (start + 3 advances), its 3 operations, no timers (the terminal commit
 * clears them), under 'workflow-lease' its claim row released by the terminal commit (epoch 1,
 * no holder, version 2), and every `messageEvery`-th one a workflow that waited for a signal:
 * step, waitForSignal, step, and its consumed message. Creation times spread over 30 days in
 * insertion order, as a table that grew for a month. Ids are UUIDv7 like the engine's: the
 * creation time's milliseconds, then md5 of a salt and the number (so every table's statement
 * derives the same id); BENCH_IDS=random: the md5 alone, a random UUID.
 */
function fillStatements(withClaims: boolean) {
  const id = randomIds
    ? 'y.r::uuid::text'
    : `substr(y.ms, 1, 8) || '-' || substr(y.ms, 9, 4) || '-7' || substr(y.r, 1, 3) || '-8' || substr(y.r, 4, 3) || '-' || substr(y.r, 7, 12)`;
  const from = `FROM generate_series($1::int, $2::int) g
    CROSS JOIN LATERAL (SELECT now() - interval '30 days' + (g::float8 / $5) * interval '30 days' AS t, md5($3::text || g) AS r) y0
    CROSS JOIN LATERAL (SELECT y0.t, y0.r, lpad(to_hex((extract(epoch FROM y0.t) * 1000)::bigint), 12, '0') AS ms) y
    CROSS JOIN LATERAL (SELECT ${id} AS id, g % $4 = 0 AS sig, y.t AS t) x`;
  const stmts = [
    `INSERT INTO weft.weft_workflows (id, type, status, input, output, run_number, created_at, updated_at, completed_at, version)
     SELECT x.id, CASE WHEN x.sig THEN 'signalled' ELSE 'noop3' END, 'completed', json_build_object('n', g), to_json(g + 2), 1,
            x.t, x.t + interval '60 ms', x.t + interval '60 ms', 4
     ${from}`,
    `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result, attempts, started_at, completed_at, event)
     SELECT x.id, s, CASE WHEN x.sig AND s = 1 THEN 'waitForSignal' ELSE 'step' END,
            CASE WHEN x.sig THEN (ARRAY['a', 'go', 'b'])[s + 1] ELSE chr(97 + s) END, 'completed', to_json(g + s), 1,
            CASE WHEN x.sig AND s = 1 THEN NULL ELSE x.t + s * interval '20 ms' END, x.t + (s * 20 + 5) * interval '1 ms', s
     ${from} CROSS JOIN generate_series(0, 2) s`,
    `INSERT INTO weft.weft_messages (workflow_id, kind, name, payload, consumed_seq, status, created_at)
     SELECT x.id, 'signal', 'go', to_json(g), 1, 'consumed', x.t + interval '30 ms'
     ${from} WHERE x.sig`,
  ];
  if (withClaims)
    stmts.push(`INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id, expires_at, claimed_at, version)
     SELECT x.id, 1, NULL, NULL, NULL, 2 ${from}`);
  return stmts;
}

async function fill(url: string, rows: number, withClaims: boolean) {
  const chunk = Math.max(1, Number(process.env.BENCH_FILL_CHUNK ?? 100_000));
  const messageEvery = Math.max(1, Number(process.env.BENCH_MESSAGE_EVERY ?? 4));
  const salt = randomBytes(8).toString('hex');
  const t0 = performance.now();
  return withClient(url, async (c) => {
    for (let lo = 1; lo <= rows; lo += chunk) {
      const hi = Math.min(rows, lo + chunk - 1);
      // One chunk in one transaction: a failure leaves whole workflows only.
      await c.query('BEGIN');
      for (const sql of fillStatements(withClaims)) await c.query(sql, [lo, hi, salt, messageEvery, rows]);
      await c.query('COMMIT');
      log(`  filled ${hi.toLocaleString('en')} / ${rows.toLocaleString('en')} (${round((performance.now() - t0) / 1000, 1)} s)`);
    }
    return { insertSeconds: round((performance.now() - t0) / 1000, 1), messageEvery };
  });
}

/** Rows (the statistics' estimate), size with indexes and of the primary key, of the tables the fill wrote. */
async function tableSizes(url: string) {
  const r = await withClient(url, (c) =>
    c.query<{ t: string; rows: string; bytes: string; pkey: string }>(
      `SELECT c.relname AS t, c.reltuples::bigint::text AS rows, pg_total_relation_size(c.oid)::text AS bytes,
              pg_relation_size(('weft.' || c.relname || '_pkey')::regclass)::text AS pkey
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = 'weft' AND c.relname IN ('weft_workflows', 'weft_operations', 'weft_messages', 'weft_workflow_claims')
       ORDER BY c.relname`,
    ),
  );
  return Object.fromEntries(
    r.rows.map((x) => [
      x.t,
      { rows: Number(x.rows), MiB: round(Number(x.bytes) / 2 ** 20, 1), pkeyMiB: round(Number(x.pkey) / 2 ** 20, 1) },
    ]),
  );
}

/**
 * Visibility map, hint bits and statistics as an old table has them. Both databases get it: with
 * autovacuum off (as on the bench machine) the empty one would otherwise carry the dead rows of
 * its earlier chunks and no statistics against a freshly vacuumed full one.
 */
async function vacuumAnalyze(t: Target): Promise<void> {
  await t.probe.query('VACUUM ANALYZE weft.weft_workflows, weft.weft_operations, weft.weft_messages, weft.weft_workflow_claims');
}

async function withEngine<T>(mode: Mode, label: Label, fn: (t: Target) => Promise<T>): Promise<T> {
  return withFreshDatabase(async (url, db) => {
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership: mode });
    engine.register('noop3', ThreeNoops);
    await engine.bootstrap();
    const probe = new pg.Client({ connectionString: url });
    probe.on('error', () => undefined);
    await probe.connect();
    // Dropped with the database; absent (older server, no contrib), WAL is counted server-wide.
    const walinspect = await probe.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect').then(
      () => true,
      (err: Error) => (log(`pg_walinspect unavailable (${err.message}): WAL counted server-wide`), false),
    );
    try {
      return await fn({ label, mode, url, db, engine, probe, walinspect });
    } finally {
      await probe.end();
      await engine.dispose();
    }
  });
}

interface Plan {
  rows: number;
  chunks: number;
  perChunk: number;
  autovacuumLike: boolean;
}

async function measureMode(admin: pg.Client, mode: Mode, plan: Plan) {
  return withEngine(mode, 'empty', (empty) =>
    withEngine(mode, 'full', async (full) => {
      log(`${mode}: warm-up`);
      for (const t of [empty, full]) await warmUp(t, 300);
      log(`${mode}: control, both databases empty`);
      const control = await alternate(empty, full, plan);
      log(`${mode}: filling ${full.db} with ${plan.rows.toLocaleString('en')} ended workflows`);
      const t0 = performance.now();
      const inserted = await fill(full.url, plan.rows, mode === 'workflow-lease');
      for (const t of [empty, full]) await vacuumAnalyze(t);
      // The fill's dirty pages are written now, not by a checkpoint in the middle of a chunk.
      await admin.query('CHECKPOINT').catch((err: Error) => log(`CHECKPOINT skipped: ${err.message}`));
      const filled = { ...inserted, fillSeconds: round((performance.now() - t0) / 1000, 1), tables: await tableSizes(full.url) };
      log(`${mode}: filled, vacuumed and checkpointed in ${filled.fillSeconds} s`);
      for (const t of [empty, full]) await warmUp(t, 300);
      log(`${mode}: empty vs full`);
      const m = await alternate(empty, full, plan);
      return {
        mode,
        emptyWfPerSec: m.empty.wfPerSec,
        fullWfPerSec: m.full.wfPerSec,
        ratio: m.ratio,
        pairRatiosMedian: round(median(m.pairRatios), 3),
        emptyP50Ms: m.empty.p50Ms,
        fullP50Ms: m.full.p50Ms,
        pairRatios: m.pairRatios,
        empty: m.empty,
        full: m.full,
        // The full database before the fill against the empty one: how far from 1 the method alone reads.
        control: { emptyWfPerSec: control.empty.wfPerSec, fullBeforeFillWfPerSec: control.full.wfPerSec, ratio: control.ratio },
        // The same database and engine before and after the fill (not drift-corrected).
        sameDatabase: { beforeFillWfPerSec: control.full.wfPerSec, afterFillWfPerSec: m.full.wfPerSec },
        fill: filled,
      };
    }),
  );
}

async function main() {
  const rows = Number(process.argv[2] ?? 1_000_000);
  const perChunk = Math.max(IN_FLIGHT, Number(process.env.BENCH_WORKFLOWS ?? 2000));
  const chunks = Math.max(1, Number(process.env.BENCH_CHUNKS ?? 4));
  const modes = (process.env.BENCH_MODES ?? 'workflow-lease,none').split(',') as Mode[];
  const t0 = performance.now();
  let autovacuumLike = false;
  const results = await withClient(adminUrl(), async (admin) => {
    autovacuumLike = (await autovacuumOff(admin)) && process.env.BENCH_AUTOVACUUM_LIKE !== '0';
    const out = [];
    // One mode at a time: two engines of 20 connections each stay well inside max_connections.
    for (const mode of modes) out.push(await measureMode(admin, mode, { rows, chunks, perChunk, autovacuumLike }));
    return out;
  });
  const server = new URL(adminUrl());
  const fillSeconds = round(
    results.reduce((s, r) => s + r.fill.fillSeconds, 0),
    1,
  );
  process.stdout.write(
    `${JSON.stringify(
      {
        bench: 'scale-rows',
        rows,
        inFlight: IN_FLIGHT,
        workflowsPerChunk: perChunk,
        chunksPerDatabase: chunks,
        autovacuumLike,
        ids: randomIds ? 'random (randomUUID)' : 'engine (UUIDv7)',
        fillSeconds,
        totalSeconds: round((performance.now() - t0) / 1000, 1),
        results,
        at: new Date().toISOString(),
        machine: machine(),
        database: `${server.hostname}:${server.port || 5432}`,
      },
      null,
      2,
    )}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
