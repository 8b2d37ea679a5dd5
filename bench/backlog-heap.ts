// bench/backlog-heap: the heap a queue's backlog leaves behind as it drains (decision 0064). N
// three-step workflows are started into a queue at concurrency 50 and their handles awaited, as an
// application does with a backlog; at a quarter, half and three quarters of the way, and at the
// end, the heap above the bootstrapped engine's is read after a full GC. What the caller holds (the
// handles and their results) shrinks with the backlog; what grows with the finished runs is kept
// by the engine. Not in `npm run bench`.
// node --import ./test/support/register-ts.js bench/backlog-heap.ts [N=10000]
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { queueBenchEngine } from './queue-workload.js';
import { machine, round, withFreshDatabase } from './support.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function main() {
  const n = Number(process.argv[2] ?? 10_000);
  const out = await withFreshDatabase(async (url) => {
    const engine = await queueBenchEngine(url);
    gc();
    const base = process.memoryUsage().heapUsed;
    const heapMb = () => {
      gc();
      return round((process.memoryUsage().heapUsed - base) / 1e6, 1);
    };
    const handles = await Promise.all(Array.from({ length: n }, (_, i) => engine.start('noop3', { n: i }, { queue: 'fifty' })));
    const results = handles.map((h) => h.result({ timeout: '600s' }));
    const heapAboveEngineMb: Record<string, number> = {};
    for (const part of [0.25, 0.5, 0.75]) {
      await results[Math.floor(n * part) - 1];
      heapAboveEngineMb[`${part * 100}%`] = heapMb();
    }
    await Promise.all(results);
    heapAboveEngineMb.end = heapMb();
    await engine.dispose();
    return { workflows: n, heapAboveEngineMb };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'backlog-heap', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
