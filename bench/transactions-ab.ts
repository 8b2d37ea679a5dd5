// bench/transactions-ab (decision 0055): transactional workflows (bench/transactions.ts's TxInserts)
// from two source trees in ONE process, chunks alternating (which goes first alternates), 16 in
// flight, each engine on its own schema of one database: Node and server CPU per workflow and
// workflows/s of each, with the median over rounds of B ÷ A. Run it also with A and B swapped
// (one run's A/A read 0.93 for Node on a loaded machine: that is its noise).
// BENCH_A=/path/to/other/worktree node --import ./test/support/register-ts.js bench/transactions-ab.ts [per chunk, 600] [rounds, 10]
//   BENCH_B defaults to this tree.
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { APP_ROWS_TABLE, backendsCpuMs, silent, withFreshDatabase } from './support.js';
type Ctx = {
  workflowId: string;
  transaction(name: string, fn: (m: { query(s: string, p: unknown[]): Promise<unknown> }) => Promise<void>): Promise<void>;
};
const INSERT = 'INSERT INTO app_rows (workflow_id, seq) VALUES ($1, $2)';
class TxInserts {
  async run(ctx: Ctx) {
    for (let i = 0; i < 3; i++) await ctx.transaction(`s${i}`, async (manager) => void (await manager.query(INSERT, [ctx.workflowId, i])));
    return 3;
  }
}
const engineOf = async (root: string) => (await import(path.join(root, 'libs/weft/src/index.ts'))).WeftEngine;
if (!process.env.BENCH_A) throw new Error('BENCH_A: the root of the source tree to compare with');
const A = await engineOf(process.env.BENCH_A);
const B = await engineOf(process.env.BENCH_B ?? path.join(import.meta.dirname, '..'));
const per = Number(process.argv[2] ?? 600),
  rounds = Number(process.argv[3] ?? 10),
  inFlight = 16;
await withFreshDatabase(async (url, db) => {
  const admin = new pg.Pool({ connectionString: url, max: 2 });
  admin.on('error', () => undefined);
  await admin.query(APP_ROWS_TABLE);
  type Engine = {
    register(t: string, c: unknown): Engine;
    bootstrap(): Promise<void>;
    dispose(): Promise<void>;
    start(t: string, i: unknown): Promise<{ result(o: unknown): Promise<unknown> }>;
  };
  const engines: Record<string, Engine> = {};
  for (const [k, E] of [
    ['a', A],
    ['b', B],
  ] as const) {
    const e = await E.create({ database: { url, poolSize: 20 }, schema: `weft_${k}`, logger: silent });
    e.register('tx', TxInserts);
    await e.bootstrap();
    engines[k] = e;
  }
  const server = () => backendsCpuMs(admin, db);
  const chunk = async (k: string, n: number) => {
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (next < n) {
          next++;
          await (await engines[k]!.start('tx', {})).result({ timeout: '600s' });
        }
      }),
    );
    return (performance.now() - t0) / 1000;
  };
  await chunk('a', 300);
  await chunk('b', 300);
  const res: Record<string, { node: number[]; server: number[]; rate: number[] }> = {
    a: { node: [], server: [], rate: [] },
    b: { node: [], server: [], rate: [] },
  };
  for (let r = 0; r < rounds; r++) {
    for (const k of r % 2 ? ['b', 'a'] : ['a', 'b']) {
      const s0 = await server();
      const n0 = process.cpuUsage();
      const secs = await chunk(k, per);
      const n1 = process.cpuUsage(n0);
      const s1 = await server();
      res[k]!.node.push((n1.user + n1.system) / 1000 / per);
      res[k]!.server.push((s1 - s0) / per);
      res[k]!.rate.push(per / secs);
    }
  }
  const med = (xs: number[]) => {
    const s = [...xs].sort((x, y) => x - y);
    return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  };
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
  const f = (x: number) => +x.toFixed(3);
  const pairs = (m: 'node' | 'server' | 'rate') => res.b[m].map((v, i) => v / res.a[m][i]!);
  process.stdout.write(
    JSON.stringify({
      load: fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0],
      nodeMs: { a: f(mean(res.a.node)), b: f(mean(res.b.node)), medianRatioBA: f(med(pairs('node'))) },
      serverMs: { a: f(mean(res.a.server)), b: f(mean(res.b.server)), medianRatioBA: f(med(pairs('server'))) },
      wfps: { a: Math.round(mean(res.a.rate)), b: Math.round(mean(res.b.rate)), medianRatioBA: f(med(pairs('rate'))) },
    }) + '\n',
  );
  for (const e of Object.values(engines)) await e.dispose();
  await admin.end();
});
