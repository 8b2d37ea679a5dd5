// bench/transactions: a 3-step workflow whose steps each insert one application row, with
// transactional steps (ctx.transaction: the row and the step's record in one transaction) against
// plain steps (ctx.step inserting through the app's own pool), at 1, 16 and 64 in flight, chunks
// alternating between the two on one engine so the ratio is taken in one window. Prints JSON:
// workflows/s per shape and level, transactional ÷ plain, and commits per workflow of each.
// node --import ./test/support/register-ts.js bench/transactions.ts [N per level, default 1200]
//   BENCH_LEVELS=1,16,64  BENCH_CHUNKS=4
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import pg from 'pg';
import { machine, round, silent, StatementCounter, withFreshDatabase } from './support.js';

const counter = new StatementCounter().install();
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

async function main() {
  const n = Number(process.argv[2] ?? 1200);
  const levels = (process.env.BENCH_LEVELS ?? '1,16,64').split(',').map(Number);
  const chunks = Number(process.env.BENCH_CHUNKS ?? 4);
  const out = await withFreshDatabase(async (url, db) => {
    app = new pg.Pool({ connectionString: url, max: 20 });
    app.on('error', (e) => process.stderr.write(`app pool: ${e.message}\n`));
    await app.query('CREATE TABLE app_rows (id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL)');
    // Transactional bodies hold a connection each while they run: a pool for 64 of them.
    const engine = await WeftEngine.create({ database: { url, poolSize: 70 }, schema: 'weft', logger: silent });
    engine.register(TYPES.plain, PlainInserts).register(TYPES.transactional, TxInserts);
    await engine.bootstrap();
    for (const shape of ['plain', 'transactional'] as const) await chunk(engine, shape, 300, 16); // warm-up
    const rows = [];
    for (const inFlight of levels) {
      const per = Math.max(1, Math.floor((inFlight === 1 ? n / 4 : n) / chunks));
      const time: Record<Shape, number> = { plain: 0, transactional: 0 };
      const commits: Record<Shape, number> = { plain: 0, transactional: 0 };
      for (let c = 0; c < chunks; c++) {
        const order: Shape[] = c % 2 === 0 ? ['plain', 'transactional'] : ['transactional', 'plain'];
        for (const shape of order) {
          const before = counter.commits(db);
          time[shape] += await chunk(engine, shape, per, inFlight);
          commits[shape] += counter.commits(db) - before;
        }
      }
      const total = per * chunks;
      const wf = (s: Shape) => round(total / time[s], 0);
      rows.push({
        inFlight,
        workflows: total,
        plainWfPerSec: wf('plain'),
        transactionalWfPerSec: wf('transactional'),
        ratioTransactionalOverPlain: round(time.plain / time.transactional, 2),
        commitsPerWorkflow: { plain: round(commits.plain / total, 2), transactional: round(commits.transactional / total, 2) },
      });
    }
    const [{ n: stored }] = (await app.query<{ n: number }>('SELECT count(*)::int AS n FROM app_rows')).rows;
    await engine.dispose();
    await app.end();
    return { rows, appRows: stored };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'transactions', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
