// bench/app-transaction-ab (decision 0044): a transactional step's own statements, from two
// source trees in ONE process, in chunks that alternate, so both see the same load (a machine
// shared by several sessions moves 2x within minutes; whole-bench A/B runs drown in it). Each
// transaction: beginAppTransaction, an INSERT through its manager, commitAfter(an UPDATE ...
// RETURNING as the advance, a SELECT 1 / count(*) as the check). Prints Node and server CPU per
// transaction (the server's: its backends for this database, from /proc) and transactions/s.
// BENCH_A=/path/to/other/worktree node --import ./test/support/register-ts.js bench/app-transaction-ab.ts [per chunk, default 1000] [rounds, default 8]
//   BENCH_B defaults to this tree. 12 transactions at once on a pool of 14 each.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import type { AppTransaction } from '../libs/weft/src/storage/app-transaction.js';
import { APP_ROWS_TABLE, backendsCpuMs, withFreshDatabase } from './support.js';

type Open = (o: {
  database: { url: string; poolSize: number };
  schema: string;
}) => Promise<{ sql: { beginAppTransaction(): Promise<AppTransaction> }; close(): Promise<void> }>;
const source = (root: string) => path.join(root, 'libs/weft/src/storage/data-source.ts');
if (!process.env.BENCH_A) throw new Error('BENCH_A: the root of the source tree to compare with (a worktree of the parent commit)');
const base = (await import(source(process.env.BENCH_A))).openDatabase as Open;
const next = (await import(source(process.env.BENCH_B ?? path.join(import.meta.dirname, '..')))).openDatabase as Open;

const ADV = 'UPDATE wf SET v = v + 1 WHERE id = $1 RETURNING v, id';
const CHECK = 'SELECT 1 / count(*) AS ok FROM wf WHERE id = $1';
const INSERT = 'INSERT INTO app_rows (workflow_id, seq) VALUES ($1, $2)';
const chunkN = Number(process.argv[2] ?? 1000),
  rounds = Number(process.argv[3] ?? 8),
  workers = 12;

await withFreshDatabase(async (url, dbName) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on('error', () => undefined);
  await admin.query(APP_ROWS_TABLE);
  await admin.query('CREATE TABLE wf (id text PRIMARY KEY, v int NOT NULL)');
  await admin.query(`INSERT INTO wf SELECT 'w' || g, 0 FROM generate_series(0, ${workers - 1}) g`);
  const dbs = {
    base: await base({ database: { url, poolSize: workers + 2 }, schema: 'weft_a' }),
    next: await next({ database: { url, poolSize: workers + 2 }, schema: 'weft_b' }),
  };
  const server = () => backendsCpuMs(admin, dbName);
  const run = async (which: 'base' | 'next', n: number) => {
    let i = 0;
    await Promise.all(
      Array.from({ length: workers }, async (_, w) => {
        while (i < n) {
          i++;
          const tx = await dbs[which].sql.beginAppTransaction();
          await tx.manager.query(INSERT, [`w${w}`, i]);
          const out = await tx.commitAfter([
            { sql: ADV, params: [`w${w}`] },
            { sql: CHECK, params: [`w${w}`] },
          ]);
          if (!out.committed) throw new Error('not committed');
        }
      }),
    );
  };
  await run('base', 500);
  await run('next', 500);
  const tot = { base: { node: 0, server: 0, s: 0 }, next: { node: 0, server: 0, s: 0 } };
  for (let r = 0; r < rounds; r++) {
    for (const which of (r % 2 ? ['next', 'base'] : ['base', 'next']) as Array<'base' | 'next'>) {
      const s0 = await server();
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await run(which, chunkN);
      const c1 = process.cpuUsage(c0);
      const t1 = performance.now();
      const s1 = await server();
      tot[which].node += (c1.user + c1.system) / 1000;
      tot[which].server += s1 - s0;
      tot[which].s += (t1 - t0) / 1000;
    }
  }
  const n = chunkN * rounds;
  for (const k of ['base', 'next'] as const)
    console.log(
      `${k === 'base' ? 'A' : 'B'}: node ${((tot[k].node / n) * 1000).toFixed(1)} us/tx, server ${((tot[k].server / n) * 1000).toFixed(1)} us/tx, ${(n / tot[k].s).toFixed(0)} tx/s`,
    );
  console.log('load', fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  await dbs.base.close();
  await dbs.next.close();
  await admin.end();
});
