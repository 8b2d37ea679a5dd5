// bench/purge: retention deleting N ended workflows (3 operations and a message each) while the hot
// path runs 3-step workflows at 16 in flight and 1,000 more workflows (BENCH_PURGE_RUNNING) sit
// running, parked on a signal. Prints JSON: hot-path wf/s during the purge and after it (same run,
// same engine), their ratio, the purge's rows per second, and whether every running workflow came
// through untouched (its history intact, then signalled and completed).
// node --import ./test/support/register-ts.js bench/purge.ts [N=100000]
import { WeftEngine, type WorkflowContext } from '@weft/nest';
import pg from 'pg';
import { machine, round, silent, ThreeNoops, withFreshDatabase } from './support.js';

/** N ended workflows, 30 days old, written in bulk (as a table that has grown for a month would hold them). */
async function seed(url: string, n: number): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    await c.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input, output, completed_at, created_at)
                   SELECT 'old-' || g, 'noop3', 'completed', '{}'::json, '3'::json, now() - interval '30 days', now() - interval '30 days'
                   FROM generate_series(1, $1) g`,
      [n],
    );
    await c.query(
      `INSERT INTO weft.weft_operations (workflow_id, seq, kind, name, status, result, attempts)
                   SELECT 'old-' || g, s, 'step', chr(96 + s + 1), 'completed', '1'::json, 1
                   FROM generate_series(1, $1) g, generate_series(0, 2) s`,
      [n],
    );
    await c.query(
      `INSERT INTO weft.weft_messages (workflow_id, kind, name, payload, consumed_seq, status)
                   SELECT 'old-' || g, 'signal', 'poke', '{}'::json, 0, 'consumed' FROM generate_series(1, $1) g`,
      [n],
    );
    await c.query('VACUUM ANALYZE weft.weft_workflows, weft.weft_operations, weft.weft_messages');
  } finally {
    await c.end();
  }
}

/** Runs one step, then waits for a signal: running and parked through the whole purge. */
class Parked {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    return ctx.waitForSignal<number>('go');
  }
}

/** The parked workflows that still have their one recorded operation. */
async function intact(url: string): Promise<number> {
  const c = new pg.Client({ connectionString: url });
  c.on('error', () => undefined);
  await c.connect();
  try {
    const r = await c.query(
      `SELECT count(*)::int AS n FROM weft.weft_workflows w
       WHERE w.type = 'parked' AND w.status = 'running'
         AND (SELECT count(*) FROM weft.weft_operations o WHERE o.workflow_id = w.id) = 1`,
    );
    return r.rows[0].n as number;
  } finally {
    await c.end();
  }
}

/** Workflows per second at 16 in flight for `ms`. */
async function window(engine: WeftEngine, ms: number): Promise<number> {
  const until = performance.now() + ms;
  let done = 0;
  let n = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (performance.now() < until) {
        await (await engine.start('noop3', { n: n++ })).result();
        done++;
      }
    }),
  );
  return done / ((performance.now() - t0) / 1000);
}

async function main() {
  const total = Number(process.argv[2] ?? 100_000);
  const out = await withFreshDatabase(async (url) => {
    const hot = await WeftEngine.create({ database: { url, poolSize: 20 }, schema: 'weft', logger: silent });
    hot.register('noop3', ThreeNoops).register('parked', Parked);
    await hot.bootstrap();
    const running = Number(process.env.BENCH_PURGE_RUNNING ?? 1000);
    const parked = [];
    for (let i = 0; i < running; i++) parked.push(await hot.start('parked', {}, { workflowId: `parked-${i}` }));
    const parkedBefore = await (async () => {
      for (let tries = 0; tries < 600; tries++) {
        const n = await intact(url);
        if (n === running) return n;
        await new Promise((r) => setTimeout(r, 100));
      }
      return intact(url);
    })();
    // The purging engine: its retention keeps completed workflows one day; the hot path's stay.
    const purger = await WeftEngine.create({
      database: { url, poolSize: 4 },
      schema: 'weft',
      logger: silent,
      backgroundTasks: 'manual',
      retention: { completed: '1d' },
    });
    await purger.bootstrap();
    await seed(url, total);
    await window(hot, 3000); // warm-up
    const without: number[] = [];
    const during: number[] = [];
    let purged = 0;
    let purging = true;
    const t0 = performance.now();
    // Paced as the background tick paces it: one pass (at most 1 s of batches) every 10 s.
    // BENCH_PURGE_BACK_TO_BACK=1 runs passes without the pause (the worst case for the hot path).
    const backToBack = process.env.BENCH_PURGE_BACK_TO_BACK === '1';
    const purge = (async () => {
      while (purging) {
        const started = performance.now();
        const { purged: n } = await purger.runMaintenance();
        purged += n;
        if (n === 0) break;
        if (!backToBack) await new Promise((r) => setTimeout(r, Math.max(0, 10_000 - (performance.now() - started))));
      }
    })();
    while (purged < total && performance.now() - t0 < 600_000) during.push(await window(hot, 3000));
    await purge.catch(() => undefined);
    const purgeSeconds = (performance.now() - t0) / 1000;
    purging = false;
    for (let i = 0; i < 3; i++) without.push(await window(hot, 3000));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    // Untouched: still running with their history, and each still completes with its signal.
    const parkedAfter = await intact(url);
    await Promise.all(parked.map((h, i) => h.signal('go', i)));
    const results = await Promise.all(parked.map((h) => h.result<number>({ timeout: '120s' })));
    const parkedCompleted = results.filter((v, i) => v === i).length;
    await purger.dispose();
    await hot.dispose();
    return {
      endedWorkflows: total,
      purged,
      purgeSeconds: round(purgeSeconds, 1),
      purgedPerSec: round(purged / purgeSeconds, 0),
      hotPathWfPerSec: { during: during.map((x) => round(x, 0)), without: without.map((x) => round(x, 0)) },
      ratioDuringOverWithout: round(median(during) / median(without), 2),
      running: { parked: running, intactBefore: parkedBefore, intactAfter: parkedAfter, completedAfterSignal: parkedCompleted },
    };
  });
  process.stdout.write(`${JSON.stringify({ bench: 'purge', at: new Date().toISOString(), machine: machine(), ...out }, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
