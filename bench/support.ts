import type { WorkflowContext } from '@weft/nest';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import pg, { Client } from 'pg';

/** Server for benchmarks: BENCH_DATABASE_URL, else the local one on 127.0.0.1:5432. */
export const adminUrl = () =>
  process.env.BENCH_DATABASE_URL ?? process.env.WEFT_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export async function withFreshDatabase<T>(fn: (url: string, name: string) => Promise<T>): Promise<T> {
  const name = `weft_bench_${randomBytes(4).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl() });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString(), name);
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.end();
  }
}

export async function xactCommits(url: string, name: string): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    // Stats are per backend until flushed; force a fresh snapshot.
    await c.query('SELECT pg_stat_clear_snapshot()');
    const r = await c.query('SELECT xact_commit::bigint AS n FROM pg_stat_database WHERE datname = $1', [name]);
    return Number(r.rows[0].n);
  } finally {
    await c.end();
  }
}

/**
 * Bench-only hook: counts, per database, the statements every pg client of this process sends
 * and the commits they make (an autocommit statement, or a COMMIT), the moment they are sent.
 * `pg_stat_database.xact_commit` lags by up to 10 s (a backend flushes its counters at most
 * once a second, and an idle one only after 10 s), which made short levels read ~0.
 */
type QueryArg = string | { text?: unknown; statements?: Array<{ text: string }> } | undefined;

/** The statement texts of what a client's query() got: a text, a config, or a batch (libs/weft/src/storage/pg-batch.ts: several statements, one Sync). */
function textsOf(config: QueryArg): string[] {
  if (typeof config === 'string') return [config];
  if (Array.isArray(config?.statements)) return config.statements.map((st) => st.text);
  return typeof config?.text === 'string' ? [config.text] : [];
}

export class StatementCounter {
  private readonly commitsByDb = new Map<string, number>();
  private readonly roundTripsByDb = new Map<string, number>();
  private readonly textsByDb = new Map<string, Map<string, number>>();

  /** `byText`: also count statements by their text (costs a map update per statement). */
  constructor(private readonly byText = false) {}

  /** `client`: the Client class of another copy of node-pg (bench/dbos has its own), else this one's. */
  install(client: { prototype: object } = pg.Client): this {
    const proto = client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const inTransaction = new WeakSet<object>();
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the patched method needs both `this`es
    const counter = this;
    type Client = { connectionParameters?: { database?: string }; pipeline?: boolean; _activeQuery?: unknown; _sentQueryQueue?: unknown[] };
    proto.query = function (this: Client, ...args: unknown[]) {
      const config = args[0] as QueryArg;
      const db = this.connectionParameters?.database ?? '?';
      // A statement written behind another one still unanswered on a pipelined client (pg's
      // pipeline mode) shares that one's round trip.
      const ridesAlong =
        this.pipeline === true &&
        ((this._activeQuery !== null && this._activeQuery !== undefined) || (this._sentQueryQueue?.length ?? 0) > 0);
      if (!ridesAlong) counter.roundTripsByDb.set(db, (counter.roundTripsByDb.get(db) ?? 0) + 1);
      for (const t of textsOf(config)) counter.count(this, db, t, inTransaction);
      return original.apply(this, args);
    };
    return this;
  }

  private count(client: object, db: string, text: string, inTransaction: WeakSet<object>): void {
    const head = text.length < 40 ? text.trimStart().slice(0, 8).toUpperCase() : '';
    const inTx = inTransaction.has(client);
    // TypeORM's query runners open theirs with START TRANSACTION (transactional steps).
    if (head.startsWith('BEGIN') || head.startsWith('START TR')) inTransaction.add(client);
    else if (head.startsWith('COMMIT')) {
      inTransaction.delete(client);
      this.commitsByDb.set(db, (this.commitsByDb.get(db) ?? 0) + 1);
    } else if (head.startsWith('ROLLBACK')) inTransaction.delete(client);
    else if (!inTx) this.commitsByDb.set(db, (this.commitsByDb.get(db) ?? 0) + 1);
    if (!this.byText) return;
    const texts = this.textsByDb.get(db) ?? new Map<string, number>();
    this.textsByDb.set(db, texts);
    const key = inTx && !head.startsWith('COMMIT') && !head.startsWith('ROLLBACK') ? `[in a transaction] ${text}` : text;
    texts.set(key, (texts.get(key) ?? 0) + 1);
  }

  commits(db: string): number {
    return this.commitsByDb.get(db) ?? 0;
  }

  /** Statements sent on `db` that waited for an answer of their own (a pipeline's first counts, the rest ride along). */
  roundTrips(db: string): number {
    return this.roundTripsByDb.get(db) ?? 0;
  }

  /** Statement texts and how often each was sent (with `byText`), for a delta. */
  texts(db: string): Map<string, number> {
    return new Map(this.textsByDb.get(db) ?? []);
  }

  /** Adds to `into` what was sent on `db` since `before` (a `texts(db)` taken earlier), by text. */
  addSince(into: Map<string, number>, db: string, before: Map<string, number>): void {
    for (const [text, n] of this.texts(db)) {
      const delta = n - (before.get(text) ?? 0);
      if (delta > 0) into.set(text, (into.get(text) ?? 0) + delta);
    }
  }

  /** A statement's text shortened to a label: whitespace collapsed, its first 100 characters. */
  static label(text: string): string {
    return text.replace(/\s+/g, ' ').trim().slice(0, 100);
  }

  /** Statements per workflow by label, most sent first, from counts by text. */
  static perWorkflow(texts: Map<string, number>, workflows: number): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [text, n] of [...texts].sort((a, b) => b[1] - a[1])) {
      const label = StatementCounter.label(text);
      out[label] = round((out[label] ?? 0) + n / workflows, 3);
    }
    return out;
  }
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export const round = (n: number, digits = 2) => Math.round(n * 10 ** digits) / 10 ** digits;

/** The p50 of unsorted latencies in ms, to the microsecond (a chunk's figure). */
export const p50Ms = (latencies: number[]) =>
  round(
    percentile(
      [...latencies].sort((a, b) => a - b),
      50,
    ),
    3,
  );

export function machine() {
  return { cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memGiB: round(os.totalmem() / 2 ** 30, 1), node: process.version };
}

/** The benches' workload: three no-op steps. */
export class ThreeNoops {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => input.n);
    const b = await ctx.step('b', () => a + 1);
    return ctx.step('c', () => b + 1);
  }
}

/** Benches print JSON on stdout: the engine's logs go to stderr, warnings and errors only. */
export const silent = {
  log: () => undefined,
  warn: (m: string) => process.stderr.write(`${m}\n`),
  error: (m: string) => process.stderr.write(`${m}\n`),
};

/** Whether the server runs without autovacuum (as the bench machine's does: its conf.d sets it off). */
export async function autovacuumOff(client: pg.ClientBase | pg.Pool): Promise<boolean> {
  return (await client.query<{ a: string }>(`SELECT current_setting('autovacuum') AS a`)).rows[0]!.a === 'off';
}

/**
 * With autovacuum off on the server, what its default rules would do (the server's autovacuum_*
 * settings) to the `schema` tables of the client's database, run between chunks: without it the
 * statistics stay those of the first few hundred rows, generic plans keep scanning tables the
 * measurement itself grows, and index scans step over the dead entries of every row changed since
 * the start, which no production server (autovacuum on by default) carries. Tallies what it ran.
 */
export async function autovacuumLike(client: pg.ClientBase | pg.Pool, tally: Record<string, number>, schema = 'weft'): Promise<void> {
  const setting = (name: string) => `current_setting('autovacuum_${name}')::float8`;
  const r = await client.query<{ relname: string; vacuum: boolean; analyze: boolean }>(
    `SELECT s.relname,
            s.n_dead_tup > ${setting('vacuum_threshold')} + ${setting('vacuum_scale_factor')} * x.n
              OR s.n_ins_since_vacuum > ${setting('vacuum_insert_threshold')} + ${setting('vacuum_insert_scale_factor')} * x.n AS vacuum,
            s.n_mod_since_analyze > ${setting('analyze_threshold')} + ${setting('analyze_scale_factor')} * x.n AS analyze
     FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid CROSS JOIN LATERAL (SELECT greatest(c.reltuples, 0) AS n) x
     WHERE s.schemaname = $1`,
    [schema],
  );
  for (const { relname, vacuum, analyze } of r.rows) {
    if (!vacuum && !analyze) continue;
    const what = vacuum ? (analyze ? 'VACUUM ANALYZE' : 'VACUUM') : 'ANALYZE';
    await client.query(`${what} "${schema}"."${relname}"`);
    tally[`${what} ${relname}`] = (tally[`${what} ${relname}`] ?? 0) + 1;
  }
}

/**
 * CPU time (ms, user + system) of the backends serving database `db` other than the asking one,
 * from /proc: the A/B benches run beside their server. A backend that ended meanwhile counts nothing.
 */
export async function backendsCpuMs(client: pg.Pool | pg.ClientBase, db: string): Promise<number> {
  const { rows } = await client.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()', [
    db,
  ]);
  let ticks = 0;
  for (const { pid } of rows) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(fields[11]) + Number(fields[12]); // utime, stime, in 10 ms ticks
    } catch {
      /* gone */
    }
  }
  return ticks * 10;
}

/**
 * Each case timed in a transaction rolled back (the tables stay as set up), `runs` times; the
 * median per case in ms. `setups` build their case first (data they need), after the plain cases.
 */
export async function medianRolledBackMs(
  db: pg.ClientBase,
  cases: Record<string, () => Promise<unknown>>,
  setups: Record<string, () => Promise<() => Promise<unknown>>> = {},
  runs = 25,
): Promise<Record<string, number>> {
  const median = async (f: () => Promise<unknown>) => {
    const times: number[] = [];
    for (let i = 0; i < runs; i++) {
      await db.query('BEGIN');
      const t0 = performance.now();
      await f();
      times.push(performance.now() - t0);
      await db.query('ROLLBACK');
    }
    return round(
      percentile(
        times.sort((x, y) => x - y),
        50,
      ),
    );
  };
  const out: Record<string, number> = {};
  for (const [k, f] of Object.entries(cases)) out[k] = await median(f);
  for (const [k, setup] of Object.entries(setups)) out[k] = await median(await setup());
  return out;
}

/** The application's table the transaction benches' steps insert into (one row a step). */
export const APP_ROWS_TABLE = 'CREATE TABLE app_rows (id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL)';
