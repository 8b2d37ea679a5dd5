// bench/heartbeats: 1,000 workflows in flight, each one step of 30 ticks of 100 ms (3 s: the writer flushes every second, so each step is written about three times), heartbeating
// at every tick against the same step without heartbeats; chunks alternate between the two on one
// engine so the ratio is taken in one window (DESIGN 9.4: heartbeating costs < 10%). Prints JSON:
// workflows/s of each, heartbeat ÷ plain, commits per workflow of each, and the statements the
// heartbeat writer sent per heartbeat.
// Ownership 'none' (BENCH_OWNERSHIP=workflow-lease or lease: the fenced batches of several engines).
// node --import ./test/support/register-ts.js bench/heartbeats.ts [in flight, default 1000]   BENCH_CHUNKS=4
import { currentStep, WeftEngine, type WorkflowContext } from '@weft/nest';
import { machine, round, silent, StatementCounter, withFreshDatabase } from './support.js';

const counter = new StatementCounter().install();
const TICKS = 30;
const TICK_MS = 100;
const tick = () => new Promise((r) => setTimeout(r, TICK_MS));

class Plain {
  async run(ctx: WorkflowContext) {
    return ctx.step('work', async () => {
      for (let i = 0; i < TICKS; i++) await tick();
      return TICKS;
    });
  }
}

class Beating {
  async run(ctx: WorkflowContext) {
    return ctx.step('work', async () => {
      const step = currentStep()!;
      for (let i = 0; i < TICKS; i++) {
        await tick();
        step.heartbeat({ done: i });
      }
      return TICKS;
    });
  }
}

type Shape = 'plain' | 'heartbeat';
const TYPES: Record<Shape, string> = { plain: 'plain-ticks', heartbeat: 'beating-ticks' };

/** `n` workflows started at once, each waited for: seconds from the first start to the last end. */
async function chunk(engine: WeftEngine, shape: Shape, n: number): Promise<number> {
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, async () => (await engine.start(TYPES[shape], {})).result({ timeout: '600s' })));
  return (performance.now() - t0) / 1000;
}

async function main() {
  const n = Number(process.argv[2] ?? 1000);
  const chunks = Number(process.env.BENCH_CHUNKS ?? 4);
  const out = await withFreshDatabase(async (url, db) => {
    const ownership = (process.env.BENCH_OWNERSHIP ?? 'none') as 'none' | 'workflow-lease' | 'lease';
    const engine = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent, ownership });
    engine.register(TYPES.plain, Plain).register(TYPES.heartbeat, Beating);
    await engine.bootstrap();
    const writer = (engine as unknown as { runtime: { heartbeats: { stats: { beats: number; statements: number; ms: number } } } }).runtime
      .heartbeats;
    for (const shape of ['plain', 'heartbeat'] as const) await chunk(engine, shape, Math.min(n, 200)); // warm-up
    const time: Record<Shape, number> = { plain: 0, heartbeat: 0 };
    const commits: Record<Shape, number> = { plain: 0, heartbeat: 0 };
    const beats0 = writer.stats.beats;
    const statements0 = writer.stats.statements;
    const ms0 = writer.stats.ms;
    for (let c = 0; c < chunks; c++) {
      const order: Shape[] = c % 2 === 0 ? ['plain', 'heartbeat'] : ['heartbeat', 'plain'];
      for (const shape of order) {
        const before = counter.commits(db);
        time[shape] += await chunk(engine, shape, n);
        commits[shape] += counter.commits(db) - before;
      }
    }
    // The last batch (the removals of the last steps' rows) is written after the chunk ends.
    await new Promise((r) => setTimeout(r, 1200));
    const beats = writer.stats.beats - beats0;
    const statements = writer.stats.statements - statements0;
    const writerMs = writer.stats.ms - ms0;
    await engine.dispose();
    const total = n * chunks;
    return {
      inFlight: n,
      ownership,
      ticksPerStep: TICKS,
      tickMs: TICK_MS,
      workflows: total,
      plainWfPerSec: round(total / time.plain, 1),
      heartbeatWfPerSec: round(total / time.heartbeat, 1),
      ratioHeartbeatOverPlain: round(time.plain / time.heartbeat, 3),
      commitsPerWorkflow: { plain: round(commits.plain / total, 2), heartbeat: round(commits.heartbeat / total, 2) },
      heartbeats: beats,
      writerStatements: statements,
      statementsPerHeartbeat: round(statements / beats, 5),
      /** The writer's statements' mean round trip (each writes the steps that beat in the last second). */
      msPerWriterStatement: round(writerMs / statements, 2),
    };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'heartbeats', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
