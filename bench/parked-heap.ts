// bench/parked-heap: heap used with N workflows parked on a long durable sleep. Prints JSON.
// node --expose-gc --import ./test/support/register-ts.js bench/parked-heap.ts [N]
import { WeftEngine, WorkflowContext } from '@weft/nest';
import { machine, round, silent, withFreshDatabase } from './support.js';

class LongSleep {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    await ctx.sleep('1d');
    return 'woke';
  }
}

const heapMiB = () => {
  (globalThis as { gc?: () => void }).gc?.();
  return round(process.memoryUsage().heapUsed / 2 ** 20, 1);
};

async function main() {
  const total = Number(process.argv[2] ?? 100_000);
  const result = await withFreshDatabase(async (url) => {
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent });
    engine.register('long-sleep', LongSleep);
    await engine.bootstrap();
    const before = heapMiB();
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 64 }, async () => {
        while (next < total) {
          next++;
          await engine.start('long-sleep', {});
        }
      }),
    );
    // Wait until every workflow has its sleep timer.
    for (;;) {
      const [{ n }] = await engine.database.sql.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM weft.weft_timers WHERE kind = 'sleep'`,
      );
      if (n >= total) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const elapsedS = (performance.now() - t0) / 1000;
    const after = heapMiB();
    const snapshot = engine.healthSnapshot();
    await engine.dispose();
    return {
      workflows: total,
      startAndParkSeconds: round(elapsedS, 1),
      heapBeforeMiB: before,
      heapWithParkedMiB: after,
      liveInCache: snapshot.liveWorkflows,
      rssMiB: round(process.memoryUsage().rss / 2 ** 20, 1),
    };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'parked-heap', at: new Date().toISOString(), machine: machine(), result }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
