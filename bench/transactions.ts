// bench/transactions (issue 35): a 3-step workflow whose steps each insert one application row,
// with transactional steps (ctx.transaction: the row and the step's record commit together)
// against plain steps (ctx.step inserting through the app's own pool, its record group-committed
// apart), at 1, 16 and 64 in flight. Chunks alternate between the two on one engine, so the ratio
// is taken in one window. Prints JSON: workflows/s per shape and level, transactional ÷ plain,
// and per workflow the commits, the round trips and the statements each shape cost.
// node --import ./test/support/register-ts.js bench/transactions.ts [N per level, default 1200]
//   BENCH_LEVELS=1,16,64  BENCH_CHUNKS=4  BENCH_POOL=20 (the engine's poolSize)  BENCH_TEXTS=1 (statements per workflow by text)
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import pg from 'pg';
import { machine, round, silent, StatementCounter, withFreshDatabase } from './support.js';

const texts = process.env.BENCH_TEXTS === '1';
const counter = new StatementCounter(texts).install();
let app: pg.Pool;

const INSERT = 'INSERT INTO app_rows (workflow_id, seq) VALUES ($1, $2)';

/** Plain steps: each inserts its row through the app's pool, then its record commits apart. */
class PlainInserts {
  async run(ctx: WorkflowContext) {
    for (let i = 0; i < 3; i++) await ctx.step(`s${i}`, async () => void (await app.query(INSERT, [ctx.workflowId, i])));
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

type Shape = 'plain' | 'transactional';
const SHAPES: Shape[] = ['plain', 'transactional'];
const TYPES: Record<Shape, string> = { plain: 'plain-inserts', transactional: 'tx-inserts' };

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

const perShape = <T>(f: (s: Shape) => T): Record<Shape, T> => ({ plain: f('plain'), transactional: f('transactional') });

async function main() {
  const n = Number(process.argv[2] ?? 1200);
  const levels = (process.env.BENCH_LEVELS ?? '1,16,64').split(',').map(Number);
  const chunks = Number(process.env.BENCH_CHUNKS ?? 4);
  const out = await withFreshDatabase(async (url, db) => {
    app = new pg.Pool({ connectionString: url, max: 20 });
    app.on('error', (e) => process.stderr.write(`app pool: ${e.message}\n`));
    await app.query('CREATE TABLE app_rows (id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL)');
    // A transactional body holds a connection while it runs; at most poolSize - 2 run at once. 20
    // (18 bodies) did better at 64 in flight than 70 (68 bodies: 0.38 against 0.52 in one window
    // on 2 cores), where the backends of 68 open transactions crowd the server.
    const pool = Number(process.env.BENCH_POOL ?? 20);
    const engine = await WeftEngine.create({ database: { url, poolSize: pool }, schema: 'weft', logger: silent });
    engine.register(TYPES.plain, PlainInserts).register(TYPES.transactional, TxInserts);
    await engine.bootstrap();
    for (const shape of SHAPES) await chunk(engine, shape, 300, 16); // warm-up
    const rows = [];
    for (const inFlight of levels) {
      const per = Math.max(1, Math.floor((inFlight === 1 ? n / 4 : n) / chunks));
      const time = perShape(() => 0);
      const commits = perShape(() => 0);
      const trips = perShape(() => 0);
      const byText = perShape(() => new Map<string, number>());
      for (let c = 0; c < chunks; c++) {
        for (const shape of c % 2 === 0 ? SHAPES : [...SHAPES].reverse()) {
          const [c0, r0, t0] = [counter.commits(db), counter.roundTrips(db), counter.texts(db)];
          time[shape] += await chunk(engine, shape, per, inFlight);
          commits[shape] += counter.commits(db) - c0;
          trips[shape] += counter.roundTrips(db) - r0;
          if (texts) counter.addSince(byText[shape], db, t0);
        }
      }
      const total = per * chunks;
      rows.push({
        inFlight,
        workflows: total,
        plainWfPerSec: round(total / time.plain, 0),
        transactionalWfPerSec: round(total / time.transactional, 0),
        ratioTransactionalOverPlain: round(time.plain / time.transactional, 2),
        commitsPerWorkflow: perShape((s) => round(commits[s] / total, 2)),
        roundTripsPerWorkflow: perShape((s) => round(trips[s] / total, 2)),
        ...(texts ? { statementsPerWorkflow: perShape((s) => StatementCounter.perWorkflow(byText[s], total)) } : {}),
      });
    }
    const [{ n: stored }] = (await app.query<{ n: number }>('SELECT count(*)::int AS n FROM app_rows')).rows;
    await engine.dispose();
    await app.end();
    return { ownership: 'none', poolSize: pool, rows, appRows: stored };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'transactions', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
