// bench/dbos (issue 35): Weft's transactional steps beside DBOS Transact's (5.3) on the same
// workload, in one process and one window: a 3-step workflow whose steps each insert one
// application row in a transaction that also records the step, at 16 in flight (BENCH_LEVELS).
// Chunks of the two alternate (which goes first alternates too) after a warm-up of each; the
// figure is the median over chunk pairs of Weft ÷ DBOS. DBOS runs against its own system
// database and writes its transactions' checkpoints to dbos.transaction_completion in the app
// database, as its datasources do; Weft runs with ownership none (the bench/transactions.ts setup).
//
// DBOS's TypeORM datasource (@dbos-inc/typeorm-datasource) is not in the npm registry this
// machine reaches (E404), and its Knex one there (4.5.13) was built for the 4.x SDK (5.3.0 has no
// createTransactionCompletionSchemaPG); so DBOS's transactions go through typeorm-datasource.ts,
// a TypeORM data source written here against dbos-sdk 5.3.0's data source API, on the same
// TypeORM and node-pg as Weft (docs/performance.md).
// `npm run bench:dbos` installs bench/dbos/package.json into bench/dbos/node_modules, then runs
//   node --import ./test/support/register-ts.js bench/dbos/run.ts [workflows per shape and level, default 4800]
//   BENCH_LEVELS=16  BENCH_PAIRS=8  BENCH_POOL=20  BENCH_TEXTS=1 (statements per workflow by text)
import { DBOS } from '@dbos-inc/dbos-sdk';
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import pg from 'pg';
import { DataSource } from 'typeorm';
import { adminUrl, machine, percentile, round, silent, StatementCounter, withFreshDatabase } from '../support.js';
import { TypeOrmDbosDataSource } from './typeorm-datasource.js';

// Both copies of node-pg (Weft's and TypeORM's, and bench/dbos's own that DBOS's system database uses) are counted.
const texts = process.env.BENCH_TEXTS === '1';
const counter = new StatementCounter(texts).install();
counter.install(createRequire(import.meta.url)('pg').Client as { prototype: object });

type Shape = 'weft' | 'dbos';
const SHAPES: Shape[] = ['weft', 'dbos'];

/** Weft: each row commits with its step's record (ctx.transaction). */
class WeftTxInserts {
  async run(ctx: WorkflowContext) {
    for (let i = 0; i < 3; i++)
      await ctx.transaction(
        `s${i}`,
        async (m) => void (await m.query('INSERT INTO weft_rows (workflow_id, seq) VALUES ($1, $2)', [ctx.workflowId, i])),
      );
    return 3;
  }
}

function dbosWorkload(ds: TypeOrmDbosDataSource) {
  // DBOS: each row commits with the transaction's checkpoint (dbos.transaction_completion).
  const insert = ds.registerTransaction(
    async (workflowId: string, seq: number) => {
      await ds.entityManager.query('INSERT INTO dbos_rows (workflow_id, seq) VALUES ($1, $2)', [workflowId, seq]);
    },
    { name: 'insertRow' },
  );
  return DBOS.registerWorkflow(
    async () => {
      for (let i = 0; i < 3; i++) await insert(DBOS.workflowID!, i);
      return 3;
    },
    { name: 'dbosTxInserts' },
  );
}

async function chunk(run: () => Promise<unknown>, n: number, inFlight: number): Promise<number> {
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(inFlight, n) }, async () => {
      while (next < n) {
        next++;
        await run();
      }
    }),
  );
  return (performance.now() - t0) / 1000;
}

const dbUrl = (name: string) => {
  const u = new URL(adminUrl());
  u.pathname = `/${name}`;
  return u.toString();
};

async function main() {
  const n = Number(process.argv[2] ?? 4800);
  const levels = (process.env.BENCH_LEVELS ?? '16').split(',').map(Number);
  const pairs = Number(process.env.BENCH_PAIRS ?? 8);
  const poolSize = Number(process.env.BENCH_POOL ?? 20);
  const out = await withFreshDatabase((url, db) =>
    withFreshDatabase(async (_sysUrl, sysDb) => {
      const app = new pg.Pool({ connectionString: url, max: 2 });
      app.on('error', (e) => process.stderr.write(`app pool: ${e.message}\n`));
      for (const t of ['weft_rows', 'dbos_rows'])
        await app.query(`CREATE TABLE ${t} (id bigserial PRIMARY KEY, workflow_id text NOT NULL, seq int NOT NULL)`);
      const typeorm = new DataSource({ type: 'postgres', url, poolSize });
      await typeorm.initialize();
      const dbosWorkflow = dbosWorkload(new TypeOrmDbosDataSource('app', typeorm));
      DBOS.setConfig({ name: 'weft-bench', systemDatabaseUrl: dbUrl(sysDb), systemDatabasePoolSize: poolSize, logLevel: 'warn' });
      await DBOS.launch();
      const engine = await WeftEngine.create({ database: { url, poolSize }, schema: 'weft', logger: silent });
      engine.register('weft-tx-inserts', WeftTxInserts);
      await engine.bootstrap();
      const runs: Record<Shape, () => Promise<unknown>> = {
        weft: async () => (await engine.start('weft-tx-inserts', {})).result({ timeout: '600s' }),
        // Called as a function, DBOS runs the workflow here and returns its result (no polling for it).
        dbos: () => dbosWorkflow(),
      };
      const rows = [];
      for (const inFlight of levels) {
        const per = Math.max(inFlight, Math.floor(n / pairs));
        for (const s of SHAPES) await chunk(runs[s], Math.max(inFlight * 4, Math.floor(per / 2)), inFlight); // warm-up
        const rates: Record<Shape, number[]> = { weft: [], dbos: [] };
        const trips: Record<Shape, number> = { weft: 0, dbos: 0 };
        const commits: Record<Shape, number> = { weft: 0, dbos: 0 };
        const byText: Record<Shape, Map<string, number>> = { weft: new Map(), dbos: new Map() };
        for (let p = 0; p < pairs; p++) {
          for (const s of p % 2 === 0 ? SHAPES : [...SHAPES].reverse()) {
            const r0 = counter.roundTrips(db) + counter.roundTrips(sysDb);
            const c0 = counter.commits(db) + counter.commits(sysDb);
            const t0 = [counter.texts(db), counter.texts(sysDb)];
            rates[s].push(per / (await chunk(runs[s], per, inFlight)));
            trips[s] += counter.roundTrips(db) + counter.roundTrips(sysDb) - r0;
            commits[s] += counter.commits(db) + counter.commits(sysDb) - c0;
            if (texts) [db, sysDb].forEach((d, i) => counter.addSince(byText[s], d, t0[i]!));
          }
        }
        const paired = rates.weft.map((r, i) => r / rates.dbos[i]!).sort((a, b) => a - b);
        const total = per * pairs;
        rows.push({
          inFlight,
          workflows: total,
          pairs,
          weftWfPerSec: round(
            percentile(
              [...rates.weft].sort((a, b) => a - b),
              50,
            ),
            0,
          ),
          dbosWfPerSec: round(
            percentile(
              [...rates.dbos].sort((a, b) => a - b),
              50,
            ),
            0,
          ),
          ratioWeftOverDbos: round(percentile(paired, 50), 2),
          pairedRatioRange: [round(paired[0]!, 2), round(paired[paired.length - 1]!, 2)],
          roundTripsPerWorkflow: { weft: round(trips.weft / total, 2), dbos: round(trips.dbos / total, 2) },
          commitsPerWorkflow: { weft: round(commits.weft / total, 2), dbos: round(commits.dbos / total, 2) },
          ...(texts
            ? {
                statementsPerWorkflow: {
                  weft: StatementCounter.perWorkflow(byText.weft, total),
                  dbos: StatementCounter.perWorkflow(byText.dbos, total),
                },
              }
            : {}),
        });
      }
      const count = async (t: string) => (await app.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t}`)).rows[0]!.n;
      const appRows = { weft: await count('weft_rows'), dbos: await count('dbos_rows') };
      await engine.dispose();
      await DBOS.shutdown();
      await typeorm.destroy();
      await app.end();
      return { versions: versions(), ownership: 'none', poolSize, rows, appRows };
    }),
  );
  process.stdout.write(`${JSON.stringify({ bench: 'dbos', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

function versions() {
  const v = (name: string) => {
    const at = [
      new URL(`./node_modules/${name}/package.json`, import.meta.url),
      new URL(`../../node_modules/${name}/package.json`, import.meta.url),
    ];
    const file = at.find((u) => fs.existsSync(u));
    return file ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version : undefined;
  };
  const root = (name: string) =>
    (JSON.parse(fs.readFileSync(new URL(`../../node_modules/${name}/package.json`, import.meta.url), 'utf8')) as { version: string })
      .version;
  // TypeORM and its node-pg are the root's (Weft's); DBOS's system database uses bench/dbos's own node-pg.
  return { dbosSdk: v('@dbos-inc/dbos-sdk'), typeorm: root('typeorm'), pg: root('pg'), dbosSystemDatabasePg: v('pg') };
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
