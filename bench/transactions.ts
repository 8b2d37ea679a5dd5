// bench/transactions (issue 35): a 3-step workflow whose steps each insert one application row,
// with transactional steps (ctx.transaction: the row and the step's record commit together,
// through the TypeORM EntityManager the body is given) against plain steps (ctx.step inserting
// apart, its record group-committed apart), at 1, 16 and 64 in flight. Plain steps insert two
// ways: through the app's own TypeORM DataSource ('plainTypeorm', as a Nest app's repositories
// do: the same data layer as the transactional body, so the ratio is what the transaction costs)
// and through a bare node-pg pool ('plain', the cheapest a step can insert). Per level, chunks of
// the three alternate on one engine (which goes first rotates), after a warm-up of each that is
// not counted; a ratio is the median over rounds of transactional ÷ that plain shape (each round
// ran back to back, under the same load), beside the ratio of the sums. Prints JSON, per shape
// and level: workflows/s, the commits, round trips and statements per workflow, and the CPU per
// workflow of this process and of the server's backends for the bench's database (where /proc
// shows them).
// node --import ./test/support/register-ts.js bench/transactions.ts [N per shape and level, default 4800]
//   BENCH_LEVELS=1,16,64  BENCH_PAIRS=8 (rounds)  BENCH_POOL=20 (the engine's poolSize)  BENCH_TEXTS=1 (statements per workflow by text)
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import fs from 'node:fs';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { APP_ROWS_TABLE, machine, percentile, round, silent, StatementCounter, withFreshDatabase } from './support.js';

const texts = process.env.BENCH_TEXTS === '1';
const counter = new StatementCounter(texts).install();
let app: pg.Pool;
let appOrm: DataSource;

const INSERT = 'INSERT INTO app_rows (workflow_id, seq) VALUES ($1, $2)';

/** Plain steps: each inserts its row through a bare node-pg pool, then its record commits apart. */
class PlainInserts {
  async run(ctx: WorkflowContext) {
    for (let i = 0; i < 3; i++) await ctx.step(`s${i}`, async () => void (await app.query(INSERT, [ctx.workflowId, i])));
    return 3;
  }
}

/** Plain steps through the app's TypeORM DataSource, as a Nest app's repositories write. */
class PlainTypeormInserts {
  async run(ctx: WorkflowContext) {
    for (let i = 0; i < 3; i++) await ctx.step(`s${i}`, async () => void (await appOrm.query(INSERT, [ctx.workflowId, i])));
    return 3;
  }
}

/** Transactional steps: each row commits with its step's record. */
class TxInserts {
  async run(ctx: WorkflowContext) {
    for (let i = 0; i < 3; i++) await ctx.transaction(`s${i}`, async (manager) => void (await manager.query(INSERT, [ctx.workflowId, i])));
    return 3;
  }
}

type Shape = 'plain' | 'plainTypeorm' | 'transactional';
const SHAPES: Shape[] = ['plain', 'plainTypeorm', 'transactional'];
const TYPES: Record<Shape, string> = { plain: 'plain-inserts', plainTypeorm: 'plain-typeorm-inserts', transactional: 'tx-inserts' };

async function chunk(engine: WeftEngine, shape: Shape, n: number, inFlight: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, n) }, async () => {
      while (next < n) {
        next++;
        await (await engine.start(TYPES[shape], {})).result({ timeout: '600s' });
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

const perShape = <T>(f: (s: Shape) => T): Record<Shape, T> => ({
  plain: f('plain'),
  plainTypeorm: f('plainTypeorm'),
  transactional: f('transactional'),
});
const median = (xs: number[]) =>
  percentile(
    [...xs].sort((a, b) => a - b),
    50,
  );

/**
 * CPU seconds (user + system) of the server processes serving `db`, read from /proc: the bench
 * runs beside its server. Backends that end between two reads are missed (the pools keep theirs).
 */
class ServerCpu {
  private readonly tick = 100; // USER_HZ on Linux
  constructor(private readonly db: string) {}

  async read(): Promise<number | undefined> {
    if (!fs.existsSync('/proc/self/stat')) return undefined;
    const { rows } = await app.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [this.db]);
    let ticks = 0;
    for (const { pid } of rows) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        ticks += Number(fields[11]) + Number(fields[12]); // utime, stime
      } catch {
        return undefined; // not on this machine (or it just ended)
      }
    }
    return ticks / this.tick;
  }
}

interface Totals {
  seconds: number;
  commits: number;
  trips: number;
  nodeCpu: number;
  serverCpu: number | undefined;
  rates: number[];
  byText: Map<string, number>;
}

async function measured(engine: WeftEngine, db: string, server: ServerCpu, shape: Shape, per: number, inFlight: number, into: Totals) {
  const [c0, r0, t0, s0, n0] = [counter.commits(db), counter.roundTrips(db), counter.texts(db), await server.read(), process.cpuUsage()];
  const seconds = await chunk(engine, shape, per, inFlight);
  const n1 = process.cpuUsage(n0);
  const s1 = await server.read();
  into.seconds += seconds;
  into.rates.push(per / seconds);
  into.commits += counter.commits(db) - c0;
  into.trips += counter.roundTrips(db) - r0;
  into.nodeCpu += (n1.user + n1.system) / 1e6;
  into.serverCpu = s0 === undefined || s1 === undefined || into.serverCpu === undefined ? undefined : into.serverCpu + s1 - s0;
  if (texts) counter.addSince(into.byText, db, t0);
}

async function level(engine: WeftEngine, db: string, server: ServerCpu, inFlight: number, n: number, pairs: number) {
  const per = Math.max(inFlight, Math.floor((inFlight === 1 ? n / 8 : n) / pairs));
  const totals = perShape<Totals>(() => ({ seconds: 0, commits: 0, trips: 0, nodeCpu: 0, serverCpu: 0, rates: [], byText: new Map() }));
  for (const shape of SHAPES) await chunk(engine, shape, Math.max(inFlight * 4, Math.floor(per / 2)), inFlight); // warm-up, not counted
  for (let p = 0; p < pairs; p++) {
    for (const shape of SHAPES.map((_, k) => SHAPES[(k + p) % SHAPES.length]!))
      await measured(engine, db, server, shape, per, inFlight, totals[shape]);
  }
  const total = per * pairs;
  const pairedWith = (s: Shape) => totals.transactional.rates.map((r, i) => r / totals[s].rates[i]!);
  const paired = pairedWith('plain');
  const pairedOrm = pairedWith('plainTypeorm');
  const ms = (cpu: number | undefined) => (cpu === undefined ? undefined : round((cpu / total) * 1000, 3));
  return {
    inFlight,
    workflows: total,
    pairs,
    plainWfPerSec: round(total / totals.plain.seconds, 0),
    transactionalWfPerSec: round(total / totals.transactional.seconds, 0),
    ratioTransactionalOverPlain: round(median(paired), 2),
    pairedRatioRange: [round(Math.min(...paired), 2), round(Math.max(...paired), 2)],
    ratioOfSums: round(totals.plain.seconds / totals.transactional.seconds, 2),
    plainTypeormWfPerSec: round(total / totals.plainTypeorm.seconds, 0),
    ratioTransactionalOverPlainTypeorm: round(median(pairedOrm), 2),
    pairedRatioRangeTypeorm: [round(Math.min(...pairedOrm), 2), round(Math.max(...pairedOrm), 2)],
    ratioOfSumsTypeorm: round(totals.plainTypeorm.seconds / totals.transactional.seconds, 2),
    commitsPerWorkflow: perShape((s) => round(totals[s].commits / total, 2)),
    roundTripsPerWorkflow: perShape((s) => round(totals[s].trips / total, 2)),
    nodeCpuMsPerWorkflow: perShape((s) => ms(totals[s].nodeCpu)),
    serverCpuMsPerWorkflow: perShape((s) => ms(totals[s].serverCpu)),
    ...(texts ? { statementsPerWorkflow: perShape((s) => StatementCounter.perWorkflow(totals[s].byText, total)) } : {}),
  };
}

async function main() {
  const n = Number(process.argv[2] ?? 4800);
  const levels = (process.env.BENCH_LEVELS ?? '1,16,64').split(',').map(Number);
  const pairs = Number(process.env.BENCH_PAIRS ?? 8);
  const out = await withFreshDatabase(async (url, db) => {
    app = new pg.Pool({ connectionString: url, max: 20 });
    app.on('error', (e) => process.stderr.write(`app pool: ${e.message}\n`));
    await app.query(APP_ROWS_TABLE);
    // A transactional body holds a connection while it runs; at most poolSize - 2 run at once. 20
    // (18 bodies) did better at 64 in flight than 70 (68 bodies: 0.38 against 0.52 in one window
    // on 2 cores), where the backends of 68 open transactions crowd the server.
    const pool = Number(process.env.BENCH_POOL ?? 20);
    const engine = await WeftEngine.create({ database: { url, poolSize: pool }, schema: 'weft', logger: silent });
    appOrm = new DataSource({ type: 'postgres', url, poolSize: 20 });
    await appOrm.initialize();
    engine.register(TYPES.plain, PlainInserts).register(TYPES.plainTypeorm, PlainTypeormInserts).register(TYPES.transactional, TxInserts);
    await engine.bootstrap();
    const server = new ServerCpu(db);
    const rows = [];
    for (const inFlight of levels) rows.push(await level(engine, db, server, inFlight, n, pairs));
    const [{ n: stored }] = (await app.query<{ n: number }>('SELECT count(*)::int AS n FROM app_rows')).rows;
    await engine.dispose();
    await appOrm.destroy();
    await app.end();
    return { ownership: 'none', poolSize: pool, rows, appRows: stored };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'transactions', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
