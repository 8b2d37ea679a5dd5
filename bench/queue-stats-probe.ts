// bench/queue-stats-probe (docs/decisions/0052): the queues' chunks with autovacuum's default
// rules applied before each round (as bench/queues.ts does; NOVAC=1 skips them). Per round: a
// chunk of 1,000 three-step workflows without a queue, one through the queue at concurrency 50,
// then one through the partitioned queue (100 keys, 2 per key), printing the chunks' times and the
// longest gap between two ends of the partitioned one. Before migration 1734352900000 an ANALYZE
// taken between rounds (nothing enqueued) made the partitioned chunk take about twice its time.
// STATUS_NO_STATS=1 sets the status column's statistics target to 0 first (the alternative 0052
// measured and did not take). Not in `npm run bench`.
// node --import ./test/support/register-ts.js bench/queue-stats-probe.ts [rounds, default 12]
import pg from 'pg';
import { queueBenchEngine, queueChunk } from './queue-workload.js';
import { autovacuumLike, withFreshDatabase } from './support.js';

const rounds = Number(process.argv[2] ?? 12);
await withFreshDatabase(async (url) => {
  const engine = await queueBenchEngine(url);
  const probe = new pg.Client({ connectionString: url });
  probe.on('error', () => undefined);
  await probe.connect();
  if (process.env.STATUS_NO_STATS === '1') await probe.query('ALTER TABLE weft.weft_workflows ALTER COLUMN status SET STATISTICS 0');
  const maintenance: Record<string, number> = {};
  const timed = async (f: () => Promise<unknown>) => {
    const t0 = performance.now();
    await f();
    return Math.round(performance.now() - t0);
  };
  for (let r = 0; r < rounds; r++) {
    if (process.env.NOVAC !== '1') await autovacuumLike(probe, maintenance);
    const plain = await timed(() => queueChunk(engine, 1000, 'plain'));
    const fifty = await timed(() => queueChunk(engine, 1000, 'fifty'));
    const ends: number[] = [];
    const parts = await timed(async () => {
      const handles = await Promise.all(
        Array.from({ length: 1000 }, (_, i) => engine.start('noop3', { n: i }, { queue: 'parts', partitionKey: `tenant-${i % 100}` })),
      );
      await Promise.all(handles.map((h) => h.result({ timeout: '600s' }).then(() => ends.push(performance.now()))));
    });
    ends.sort((a, b) => a - b);
    const gap = Math.round(Math.max(0, ...ends.slice(1).map((t, i) => t - ends[i]!)));
    process.stdout.write(
      `round ${r}: plain ${plain} ms, queue ${fifty} ms, partitioned ${parts} ms (longest gap between ends ${gap} ms)\n`,
    );
  }
  process.stdout.write(`maintenance: ${JSON.stringify(maintenance)}\n`);
  await probe.end();
  await engine.dispose();
});
