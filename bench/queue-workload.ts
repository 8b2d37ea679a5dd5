// The workload bench/queues.ts and bench/queue-costs.ts share: one chunk of three-step workflows
// through a queue at concurrency 50 ('fifty'), a partitioned one with 100 keys ('parts'), or
// without a queue at 50 in flight ('plain'). The queued ones are started at once and their handles
// awaited, as an application does with a backlog.
import { WeftEngine, type WorkflowClass } from '@weft/nest';
import { silent, ThreeNoops } from './support.js';

export type QueueVariant = 'plain' | 'fifty' | 'parts';

/** Runs one chunk of `n` workflows of `variant`; returns its workflows per second. */
export async function queueChunk(engine: WeftEngine, n: number, variant: QueueVariant): Promise<number> {
  const t0 = performance.now();
  if (variant !== 'plain') {
    const key = (i: number) => (variant === 'parts' ? { partitionKey: `tenant-${i % 100}` } : {});
    const handles = await Promise.all(Array.from({ length: n }, (_, i) => engine.start('noop3', { n: i }, { queue: variant, ...key(i) })));
    await Promise.all(handles.map((h) => h.result({ timeout: '600s' })));
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < n) await (await engine.start('noop3', { n: next++ })).result({ timeout: '600s' });
      }),
    );
  }
  return n / ((performance.now() - t0) / 1000);
}

/** An engine with the queues of the variants ('fifty', 'parts') and `type` (the three-step one), bootstrapped. */
export async function queueBenchEngine(url: string, type: [string, WorkflowClass] = ['noop3', ThreeNoops]): Promise<WeftEngine> {
  const engine = await WeftEngine.create({
    database: { url, poolSize: 20 },
    schema: 'weft',
    logger: silent,
    ownership: 'workflow-lease',
    queues: { fifty: { concurrency: 50 }, parts: { concurrency: 50, partition: { concurrency: 2 } } },
  });
  engine.register(...type);
  await engine.bootstrap();
  return engine;
}
