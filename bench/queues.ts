// bench/queues: what a queue costs. Prints JSON:
// - handoff latency with 1,000 queued: a queue at concurrency 1 holds a backlog of 1,000 + N
//   workflows; for each of N admissions, the time from the previous run's last step body ending to
//   the next run's first step body starting (its completion commit, the nudge, the admission
//   transaction, the launch), p50/p99;
// - throughput: N three-step workflows through a queue at concurrency 50, and through a
//   partitioned queue at concurrency 50 (100 keys, at most 2 running per key), against the same N
//   started without a queue at 50 in flight (measured before and after them: their mean), in
//   one run on one engine, and their ratios. The queued runs are started at once and their
//   handles awaited, as an application does with a backlog.
// Ownership 'workflow-lease' (BENCH_OWNERSHIP to change), as several engines would share a queue.
// node --import ./test/support/register-ts.js bench/queues.ts [N=2000]
import os from 'node:os';
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import { machine, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

const begins = new Map<string, number>();
const ends = new Map<string, number>();

/** Stamps its first and last step bodies. */
class Stamped {
  async run(ctx: WorkflowContext) {
    await ctx.step('a', () => void begins.set(ctx.workflowId, performance.now()));
    await ctx.step('b', () => 1);
    await ctx.step('c', () => void ends.set(ctx.workflowId, performance.now()));
  }
}

async function handoffLatency(engine: WeftEngine, samples: number): Promise<{ p50: number; p99: number; queuedAtStart: number }> {
  const backlog = 1000 + samples + 1;
  const ids = Array.from({ length: backlog }, (_, i) => `lat-${String(i).padStart(6, '0')}`);
  // Started in id order one batch at a time, so admission (FIFO) follows the ids.
  for (let i = 0; i < ids.length; i += 200) {
    await Promise.all(ids.slice(i, i + 200).map((id) => engine.start('stamped', {}, { workflowId: id, queue: 'one' })));
  }
  const last = ids[samples];
  await engine.result(last, { timeout: '600s' });
  const gaps = [];
  for (let i = 1; i <= samples; i++) gaps.push(begins.get(ids[i])! - ends.get(ids[i - 1])!);
  gaps.sort((a, b) => a - b);
  // The rest of the backlog must not trickle through the throughput phases.
  await Promise.all(ids.slice(samples + 1).map((id) => engine.cancel(id).catch(() => undefined)));
  return { p50: round(percentile(gaps, 50)), p99: round(percentile(gaps, 99)), queuedAtStart: backlog - 1 };
}

async function throughput(engine: WeftEngine, n: number, queued: false | 'fifty' | 'parts'): Promise<number> {
  const t0 = performance.now();
  if (queued) {
    const key = (i: number) => (queued === 'parts' ? { partitionKey: `tenant-${i % 100}` } : {});
    const handles = await Promise.all(Array.from({ length: n }, (_, i) => engine.start('noop3', { n: i }, { queue: queued, ...key(i) })));
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

async function main() {
  const n = Number(process.argv[2] ?? 2000);
  const samples = Number(process.env.BENCH_QUEUE_SAMPLES ?? 300);
  const ownership = (process.env.BENCH_OWNERSHIP ?? 'workflow-lease') as 'none' | 'workflow-lease';
  const out = await withFreshDatabase(async (url) => {
    const engine = await WeftEngine.create({
      database: { url, poolSize: 20 },
      schema: 'weft',
      logger: silent,
      ownership,
      queues: { one: { concurrency: 1 }, fifty: { concurrency: 50 }, parts: { concurrency: 50, partition: { concurrency: 2 } } },
    });
    engine.register('noop3', ThreeNoops).register('stamped', Stamped);
    await engine.bootstrap();
    await throughput(engine, 300, false); // warm-up: prepared statements, JIT
    await throughput(engine, 300, 'fifty');
    await throughput(engine, 300, 'parts');
    const latency = await handoffLatency(engine, samples);
    const before = await throughput(engine, n, false);
    const queued = await throughput(engine, n, 'fifty');
    const partitioned = await throughput(engine, n, 'parts');
    const after = await throughput(engine, n, false);
    await engine.dispose();
    const plain = (before + after) / 2;
    return {
      ownership,
      handoffLatencyMs: { ...latency, samples },
      throughput: {
        workflows: n,
        queueConcurrency50WfPerSec: round(queued, 0),
        partitioned100KeysWfPerSec: round(partitioned, 0),
        noQueue50InFlightWfPerSec: round(plain, 0),
        noQueueBeforeAndAfter: [round(before, 0), round(after, 0)],
      },
      ratioQueuedOverPlain: round(queued / plain, 2),
      ratioPartitionedOverPlain: round(partitioned / plain, 2),
      loadAverage: os.loadavg().map((l) => round(l, 1)),
    };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'queues', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
