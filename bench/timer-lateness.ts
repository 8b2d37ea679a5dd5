// bench/timer-lateness: how late a durable timer fires on the engine that owns its workflow, with
// the default timerPollInterval (1 s). Prints JSON.
// node --import ./test/support/register-ts.js bench/timer-lateness.ts [trials=20] [parked=1000]
//
// lateMs, per timer: the workflow code's wall clock when `await ctx.sleep(ms)` returns, minus
// its wall clock just before it called ctx.sleep, plus ms. It includes the commit that writes
// the timer row before the run parks (one round trip), the fire, the wake's ownership check and
// the commit that records the sleep. Two loads, in ownership 'none' and 'workflow-lease':
//   parked 1: one workflow at a time sleeps a random 1-2 s (longer than the poll interval, and
//     falling anywhere against its phase), `trials` times.
//   parked N: N workflows started together each sleep a random 1-3 s: N runs parked at once,
//     their fires spread over two seconds.
import { WeftEngine, WorkflowContext } from '@weft/nest';
import { machine, percentile, round, silent, withFreshDatabase } from './support.js';

const late: number[] = [];

class Sleeps {
  async run(ctx: WorkflowContext, input: { ms: number }) {
    const due = Date.now() + input.ms;
    await ctx.sleep(input.ms);
    late.push(Date.now() - due);
    return null;
  }
}

const figures = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { timers: s.length, p50Ms: round(percentile(s, 50), 1), p99Ms: round(percentile(s, 99), 1), maxMs: round(s[s.length - 1], 1) };
};

async function measure(ownership: 'none' | 'workflow-lease', trials: number, parked: number) {
  return withFreshDatabase(async (url) => {
    const engine = await WeftEngine.create({ database: { url, poolSize: 10 }, schema: 'weft', logger: silent, ownership });
    engine.register('sleeps', Sleeps);
    await engine.bootstrap();
    try {
      late.length = 0;
      for (let i = 0; i < trials; i++) await (await engine.start('sleeps', { ms: 1000 + Math.round(Math.random() * 1000) })).result();
      const one = figures(late);
      late.length = 0;
      await Promise.all(Array.from({ length: parked }, () => engine.start('sleeps', { ms: 1000 + Math.round(Math.random() * 2000) })));
      // Not result(): a thousand callers reading the rows would compete with the fires for the pool.
      const deadline = Date.now() + 60_000;
      while (late.length < parked && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      if (late.length < parked) throw new Error(`only ${late.length} of ${parked} timers fired within a minute`);
      return { ownership, parked1: one, [`parked${parked}`]: figures(late) };
    } finally {
      await engine.dispose();
    }
  });
}

async function main() {
  const trials = Number(process.argv[2] ?? 20);
  const parked = Number(process.argv[3] ?? 1000);
  const results = [];
  for (const ownership of ['none', 'workflow-lease'] as const) results.push(await measure(ownership, trials, parked));
  process.stdout.write(
    `${JSON.stringify({ bench: 'timer-lateness', timerPollIntervalMs: 1000, parked, machine: machine(), results }, null, 2)}\n`,
  );
}

void main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
