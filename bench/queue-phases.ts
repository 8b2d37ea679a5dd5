// bench/queue-phases: where a chunk of bench/queues.ts's workload spends its time, per variant (no
// queue at 50 in flight, a queue at concurrency 50, a partitioned one with 100 keys at 2 each).
// Not a ratio bench: it splits the figures bench/queues.ts compares. Per chunk of N three-step
// workflows: wf/s; ms from the first start() to the first start insert's send and answer, and to
// the first run's first step body (the ramp); a
// run's span, from its first step body to its last; the runs' average number inside that span;
// ms from the last step body to result() resolving (tail) and, without a queue, from start() to
// the first step body (head); the engine's advance statements (each timed from send to answer):
// commands a statement, ms a statement, and their latency weighted by step commands and by
// ending commands (a queued run's end carries the hand-off of its slot). A warm-up chunk of each,
// then BENCH_ROUNDS (6) rounds of one chunk of each, rotating which goes first; medians printed.
// node --import ./test/support/register-ts.js bench/queue-phases.ts [N=1000 per chunk]
import { WorkflowRepository, type WeftEngine, type WorkflowContext } from '@weft/nest';
import { queueBenchEngine } from './queue-workload.js';
import pg from 'pg';
import { autovacuumLike, autovacuumOff, percentile, round, withFreshDatabase } from './support.js';

type Variant = 'plain' | 'fifty' | 'parts';
const ENDS = new Set(['completed', 'failed', 'cancelled', 'timed_out']);

const firstStep = new Map<string, number>();
const lastStep = new Map<string, number>();
const startCalled = new Map<string, number>();
const resolved = new Map<string, number>();
const statements: Array<{ ms: number; commands: number; ends: number }> = [];
/** The chunk's first start insert: when it was sent and when it came back. */
let firstInsert: { sent: number; back: number } | null = null;

/** Times every advance statement of this process (all engines in it share the prototype). */
function timeAdvances(): void {
  const proto = WorkflowRepository.prototype as unknown as { advanceMany(c: Array<{ status?: string }>): Promise<unknown> };
  const original = proto.advanceMany;
  proto.advanceMany = async function (this: unknown, commands) {
    const t = performance.now();
    try {
      return await original.call(this, commands);
    } finally {
      const ends = commands.filter((c) => ENDS.has(c.status ?? '')).length;
      statements.push({ ms: performance.now() - t, commands: commands.length, ends });
    }
  };
}

/** Times the first start insert of each chunk. */
function timeFirstInsert(): void {
  const proto = WorkflowRepository.prototype as unknown as { startMany(...args: unknown[]): Promise<unknown> };
  const original = proto.startMany;
  proto.startMany = async function (this: unknown, ...args) {
    const sent = performance.now();
    try {
      return await original.apply(this, args);
    } finally {
      firstInsert ??= { sent, back: performance.now() };
    }
  };
}

class Stamped3 {
  async run(ctx: WorkflowContext, input: { n: number }) {
    const a = await ctx.step('a', () => (firstStep.set(ctx.workflowId, performance.now()), input.n));
    const b = await ctx.step('b', () => a + 1);
    return ctx.step('c', () => (lastStep.set(ctx.workflowId, performance.now()), b + 1));
  }
}

let chunkNo = 0;
async function chunk(engine: WeftEngine, n: number, v: Variant) {
  for (const m of [firstStep, lastStep, startCalled, resolved]) m.clear();
  statements.length = 0;
  firstInsert = null;
  const prefix = `c${chunkNo++}-`;
  const t0 = performance.now();
  if (v !== 'plain') {
    const key = (i: number) => (v === 'parts' ? { partitionKey: `tenant-${i % 100}` } : {});
    const handles = await Promise.all(
      Array.from({ length: n }, (_, i) => engine.start('stamped3', { n: i }, { workflowId: prefix + i, queue: v, ...key(i) })),
    );
    await Promise.all(handles.map(async (h) => (await h.result({ timeout: '600s' }), resolved.set(h.workflowId, performance.now()))));
  } else {
    let next = 0;
    await Promise.all(
      Array.from({ length: 50 }, async () => {
        while (next < n) {
          const id = prefix + next++;
          startCalled.set(id, performance.now());
          await (await engine.start('stamped3', { n: 0 }, { workflowId: id })).result({ timeout: '600s' });
          resolved.set(id, performance.now());
        }
      }),
    );
  }
  const ms = performance.now() - t0;
  const ids = [...firstStep.keys()];
  const sum = (f: (id: string) => number) => ids.reduce((a, id) => a + f(id), 0);
  const spans = sum((id) => lastStep.get(id)! - firstStep.get(id)!);
  /** Statement latency, each statement counted `w(it)` times. */
  const weighted = (w: (s: (typeof statements)[number]) => number) => {
    const weights = statements.reduce((a, s) => a + w(s), 0);
    return statements.reduce((a, s) => a + w(s) * s.ms, 0) / Math.max(1, weights);
  };
  return {
    wfPerSec: n / (ms / 1000),
    chunkMs: ms,
    firstInsertSentMs: firstInsert!.sent - t0,
    firstInsertBackMs: firstInsert!.back - t0,
    firstRunMs: Math.min(...ids.map((id) => firstStep.get(id)!)) - t0,
    spanMs: spans / n,
    runsInSpan: spans / ms,
    tailMs: sum((id) => resolved.get(id)! - lastStep.get(id)!) / n,
    headMs: v === 'plain' ? sum((id) => firstStep.get(id)! - startCalled.get(id)!) / n : null,
    commandsPerStatement: statements.reduce((a, s) => a + s.commands, 0) / statements.length,
    statementMs: statements.reduce((a, s) => a + s.ms, 0) / statements.length,
    stepCommitMs: weighted((s) => s.commands - s.ends),
    endCommitMs: weighted((s) => s.ends),
  };
}

async function main() {
  const n = Number(process.argv[2] ?? 1000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 6);
  timeAdvances();
  timeFirstInsert();
  const out = await withFreshDatabase(async (url) => {
    const engine = await queueBenchEngine(url, ['stamped3', Stamped3]);
    const variants: Variant[] = ['plain', 'fifty', 'parts'];
    for (const v of variants) await chunk(engine, n, v);
    const probe = new pg.Client({ connectionString: url });
    probe.on('error', () => undefined);
    await probe.connect();
    const vacuumed = await autovacuumOff(probe);
    const rows = new Map<Variant, Array<Awaited<ReturnType<typeof chunk>>>>(variants.map((v) => [v, []]));
    for (let i = 0; i < rounds; i++) {
      if (vacuumed) await autovacuumLike(probe, {});
      for (let k = 0; k < variants.length; k++) {
        const v = variants[(k + i) % variants.length]!;
        rows.get(v)!.push(await chunk(engine, n, v));
      }
    }
    await probe.end();
    await engine.dispose();
    return Object.fromEntries(
      variants.map((v) => {
        const rs = rows.get(v)!;
        const keys = Object.keys(rs[0]!) as Array<keyof (typeof rs)[number]>;
        const med = (k: (typeof keys)[number]) => {
          const xs = rs.map((r) => r[k]).filter((x): x is number => x !== null);
          xs.sort((a, b) => a - b);
          return xs.length ? round(percentile(xs, 50), 2) : null;
        };
        return [v, Object.fromEntries(keys.map((k) => [k, med(k)]))];
      }),
    );
  });
  const report = { bench: 'queue-phases', at: new Date().toISOString(), workflowsPerChunk: n, ...out };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
