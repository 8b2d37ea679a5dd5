// bench/queues: what a queue costs. Prints JSON:
// - handoff latency with 1,000 queued: a queue at concurrency 1 holds a backlog of 1,000 + N
//   workflows; for each of N admissions, the time from the previous run's last step body ending to
//   the next run's first step body starting (its completion commit, the nudge, the admission
//   transaction, the launch), p50/p99;
// - throughput: chunks of N three-step workflows through a queue at concurrency 50, through a
//   partitioned queue at concurrency 50 (100 keys, at most 2 running per key), and started without
//   a queue at 50 in flight, on one engine: a full chunk of each as warm-up (discarded), then
//   BENCH_QUEUE_CHUNKS (15) rounds of one chunk of each, rotating which goes first; the ratios are the
//   median over rounds of the paired ratio (queued ÷ no queue in the same round), with its quartiles
//   and the ratio of the sums beside them. The queued runs are started at once and their handles awaited, as an application does
//   with a backlog. BENCH_VERBOSE=1 prints each round on stderr.
// Ownership 'workflow-lease' (BENCH_OWNERSHIP to change), as several engines would share a queue.
// With autovacuum off on the server (this machine's), its default rules are applied after each round
// (autovacuumLike in support.ts), so an index scan meets the dead entries a production server's
// autovacuum would have left, not every one since the start; BENCH_AUTOVACUUM_LIKE=0 turns it off.
// node --import ./test/support/register-ts.js bench/queues.ts [N=1000 per chunk]
import os from 'node:os';
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import { queueChunk, type QueueVariant } from './queue-workload.js';
import pg from 'pg';
import { autovacuumLike, autovacuumOff, machine, percentile, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

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

type Variant = QueueVariant;
const VARIANTS: Variant[] = ['plain', 'fifty', 'parts'];
/** The q-quantile (0..1) of xs, interpolated between the two nearest ranks. */
const quantile = (xs: number[], q: number) => {
  const a = [...xs].sort((x, y) => x - y);
  const at = (a.length - 1) * q;
  const lo = Math.floor(at);
  return a[lo]! + (a[Math.ceil(at)]! - a[lo]!) * (at - lo);
};
const median = (xs: number[]) => quantile(xs, 0.5);
/** The paired ratios' spread: their first and third quartiles. */
const quartiles = (xs: number[]) => [round(quantile(xs, 0.25), 2), round(quantile(xs, 0.75), 2)];

async function main() {
  const n = Number(process.argv[2] ?? 1000);
  const chunks = Number(process.env.BENCH_QUEUE_CHUNKS ?? 15);
  const samples = Number(process.env.BENCH_QUEUE_SAMPLES ?? 300);
  const ownership = (process.env.BENCH_OWNERSHIP ?? 'workflow-lease') as 'none' | 'workflow-lease';
  const log = (m: string) => process.env.BENCH_VERBOSE && process.stderr.write(`${m}\n`);
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
    // A full chunk of each as warm-up (prepared statements, plans, the JIT of each path): a short one
    // left part of a path's warm-up in its first measured chunk.
    for (const v of VARIANTS) await queueChunk(engine, n, v);
    const latency = await handoffLatency(engine, samples);
    // Alternating chunks, each variant first in turn, so the machine's drift (the baseline moved
    // 444 -> 741 wf/s within one run) falls on all three alike; the ratios are paired per chunk.
    const rates = new Map<Variant, number[]>(VARIANTS.map((v) => [v, []]));
    const probe = new pg.Client({ connectionString: url });
    probe.on('error', () => undefined);
    await probe.connect();
    const vacuumed = (await autovacuumOff(probe)) && process.env.BENCH_AUTOVACUUM_LIKE !== '0';
    const maintenance: Record<string, number> = {};
    for (let i = 0; i < chunks; i++) {
      if (vacuumed) await autovacuumLike(probe, maintenance);
      const order = VARIANTS.map((_, k) => VARIANTS[(k + i) % VARIANTS.length]);
      for (const v of order) rates.get(v)!.push(await queueChunk(engine, n, v));
      log(`chunk ${i}: ${VARIANTS.map((v) => `${v} ${round(rates.get(v)!.at(-1)!, 0)}`).join(', ')} wf/s`);
    }
    await probe.end();
    await engine.dispose();
    const plain = rates.get('plain')!;
    const paired = (v: Variant) => rates.get(v)!.map((r, i) => r / plain[i]!);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    return {
      ownership,
      autovacuumLike: vacuumed ? maintenance : false,
      handoffLatencyMs: { ...latency, samples },
      throughput: {
        workflowsPerChunk: n,
        chunks,
        queueConcurrency50WfPerSec: round(median(rates.get('fifty')!), 0),
        partitioned100KeysWfPerSec: round(median(rates.get('parts')!), 0),
        noQueue50InFlightWfPerSec: round(median(plain), 0),
        noQueueChunks: plain.map((r) => round(r, 0)),
        queuedChunkRatios: paired('fifty').map((r) => round(r, 3)),
        partitionedChunkRatios: paired('parts').map((r) => round(r, 3)),
        ratioOfSums: {
          queued: round(sum(rates.get('fifty')!) / sum(plain), 3),
          partitioned: round(sum(rates.get('parts')!) / sum(plain), 3),
        },
      },
      // The median over chunks of the paired ratio (variant ÷ no queue, measured side by side).
      ratioQueuedOverPlain: round(median(paired('fifty')), 2),
      ratioPartitionedOverPlain: round(median(paired('parts')), 2),
      ratioQuartiles: { queued: quartiles(paired('fifty')), partitioned: quartiles(paired('parts')) },
      loadAverage: os.loadavg().map((l) => round(l, 1)),
    };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'queues', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
