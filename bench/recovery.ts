// bench/recovery: a fresh engine recovering N running workflows parked on a 1 h timer whose owner
// crashed (ownership 'workflow-lease'): time until all are claimed, claims held against
// maxConcurrentWorkflows, renewal headroom (database and engine side), lost claims, and the
// recovering engine's peak RSS and heap, for a few renewal periods after recovery. A second
// variant recovers the same N with maxConcurrentWorkflows = 20,000, a third with no heap bound on
// the engine's node (the first two run with --max-old-space-size=160). Prints JSON on stdout.
// node --expose-gc --enable-source-maps --import ./test/support/register-ts.js bench/recovery.ts [N]
//
// One file, three roles (RECOVERY_ROLE): the parent (no role) seeds, samples and reports; a
// 'creator' child starts the N workflows and is SIGKILLed once they are parked; an 'engine'
// child is the recovering engine, alone in its process so its memory is its own.
import { WeftEngine, type ClaimAttemptOutcome, type WeftEngineOptions, type WeftMetricsSink, type WorkflowContext } from '@weft/nest';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Client } from 'pg';
import { Child, children } from './child.js';
import { machine, percentile, round, withFreshDatabase } from './support.js';

const SCHEMA = 'weft';
/** This file: the children run it in their roles. */
const SELF = fileURLToPath(import.meta.url);
const TYPE = 'long-sleep';
/** The crashed engine's terms: short, so its claims expire soon after the kill. */
const CREATOR = { engineId: 'crashed', ttlMs: 6_000, renewMs: 2_000, inFlight: 256 };
/** The recovering engine's terms (the brief: a short TTL, 10–15 s; renewal at the default 3 s). */
const RECOVERY = { ttlMs: 12_000, renewMs: 3_000 };
/** Renewal periods observed after the engine holds everything it should. */
const OBSERVE_PERIODS = 4;
const SAMPLE_MS = 200;
/** No new claim for this long before the target is reached: recovery is stuck. */
const STUCK_MS = 90_000;
const MiB = 2 ** 20;
const median = (xs: number[]) =>
  percentile(
    xs.toSorted((a, b) => a - b),
    50,
  );
const mib = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v / MiB, 1)]));

class LongSleep {
  async run(ctx: WorkflowContext) {
    await ctx.step('before', () => 1);
    await ctx.sleep('1h');
    return 'woke';
  }
}

const env = (k: string) => process.env[k] ?? '';
// A child whose parent went away (its stdin closed) goes too, claims left as they are.
const exitWithParent = () => process.stdin.on('end', () => process.exit(0)).resume();
const out = (e: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(e)}\n`);
const log = (m: string) => process.stderr.write(`[recovery] ${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// Engines log warnings only; repeated ones (one per claim) are counted, the first few shown.
function logger(counts: Map<string, number>) {
  const show = (m: string) => {
    counts.set(m.slice(0, 40), (counts.get(m.slice(0, 40)) ?? 0) + 1);
    if (counts.get(m.slice(0, 40))! <= 5) process.stderr.write(`[${env('RECOVERY_ROLE')}] ${m}\n`);
  };
  return { log: () => undefined, warn: show, error: show };
}

/** Both engines: 'workflow-lease', the given claim terms, the one workflow type. */
async function openEngine(engineId: string, ttlMs: number, renewMs: number, opts: Partial<WeftEngineOptions>) {
  const engine = await WeftEngine.create({
    database: { url: env('DATABASE_URL'), poolSize: 10 },
    schema: SCHEMA,
    engineId,
    ownership: 'workflow-lease',
    workflowClaimTtl: ttlMs,
    workflowClaimRenewInterval: renewMs,
    ...opts,
  });
  return engine.register(TYPE, LongSleep);
}

// ---------------------------------------------------------------- the crashed engine (child)

async function creator(): Promise<void> {
  const count = Number(env('COUNT'));
  const engine = await openEngine(CREATOR.engineId, CREATOR.ttlMs, CREATOR.renewMs, {
    database: { url: env('DATABASE_URL'), poolSize: 20 },
    maxConcurrentWorkflows: count,
    logger: logger(new Map()),
  });
  exitWithParent();
  await engine.bootstrap();
  out({ event: 'bootstrapped' });
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATOR.inFlight }, async () => {
      while (next < count) await engine.start(TYPE, {}, { workflowId: `rec-${String(next++).padStart(7, '0')}` });
    }),
  );
  // Left running, claims renewed, until the parent SIGKILLs it: the crash.
}

// ---------------------------------------------------------------- the recovering engine (child)

type Pass = { startMs: number; durationMs: number; held: number };

/** Peak memory over 200 ms samples, and a coarse timeline of it (every 5 s). */
function watchMemory(t0: number, held: () => number) {
  const w = { peak: { rss: 0, heapUsed: 0, heapTotal: 0, external: 0 }, timeline: [] as number[][], samples: 0, sample, stop };
  const timer = setInterval(sample, SAMPLE_MS);
  function sample(): void {
    const m = process.memoryUsage();
    for (const k of ['rss', 'heapUsed', 'heapTotal', 'external'] as const) w.peak[k] = Math.max(w.peak[k], m[k]);
    if (w.samples++ % 25 === 0) {
      const t = round((performance.now() - t0) / 1000, 1);
      w.timeline.push([t, held(), round(m.rss / MiB, 0), round(m.heapUsed / MiB, 0)]);
    }
  }
  function stop(): void {
    clearInterval(timer);
    sample();
  }
  return w;
}

/** Renewal figures from the passes as the engine timed them (claim-registry's renewalPassDuration). */
function renewalFigures(passes: Pass[], firstClaimAt: number, ttlMs: number, t0: number) {
  // Engine-side headroom of pass k: what the local validity its predecessor gave (statement
  // sent + TTL) had left when pass k's statement came back. The first from the first claim.
  const headroom = passes.map((p, i) => (i === 0 ? firstClaimAt : passes[i - 1].startMs) + ttlMs - (p.startMs + p.durationMs));
  const gaps = passes.slice(1).map((p, i) => p.startMs - passes[i].startMs);
  const durations = passes.map((p) => p.durationMs);
  return {
    renewalPasses: passes.length,
    renewalPassMs: { p50: round(median(durations), 1), max: round(Math.max(...durations), 1) },
    maxGapBetweenPassesMs: round(Math.max(0, ...gaps), 1),
    minEngineHeadroomMs: round(Math.min(...headroom), 1),
    renewalsLate: headroom.filter((h) => h <= 0).length,
    // [s since bootstrap, pass ms, claims held, engine-side headroom ms]
    passes: passes.map((p, i) => [round((p.startMs - t0) / 1000, 1), round(p.durationMs, 0), p.held, round(headroom[i], 0)]),
  };
}

async function recoveringEngine(): Promise<void> {
  const ttlMs = Number(env('TTL_MS'));
  const passes: Pass[] = [];
  const attempts: Partial<Record<ClaimAttemptOutcome, number>> = {};
  const warnings = new Map<string, number>();
  const logs = new Map<string, number>();
  let active = 0;
  let maxActive = 0;
  let firstClaimAt = 0;
  let renewalFailures = 0;
  // The engine's own figures, through its metric hooks: exact, not sampled.
  const metrics: Partial<WeftMetricsSink> = {
    renewalPassDuration: (s) => {
      const end = performance.now();
      passes.push({ startMs: end - s * 1000, durationMs: s * 1000, held: active });
    },
    renewalFailure: () => renewalFailures++,
    claimsActive: (n) => {
      if (n > 0 && firstClaimAt === 0) firstClaimAt = performance.now();
      active = n;
      maxActive = Math.max(maxActive, n);
    },
    claimAttempt: (o) => (attempts[o] = (attempts[o] ?? 0) + 1),
  };
  const engine = await openEngine(env('ENGINE_ID'), ttlMs, Number(env('RENEW_MS')), {
    maxConcurrentWorkflows: Number(env('MAX_CONCURRENT')),
    metrics,
    onWarning: (w) => warnings.set(w.name, (warnings.get(w.name) ?? 0) + 1),
    logger: logger(logs),
  });
  const t0 = performance.now();
  const mem = watchMemory(t0, () => active);
  const baseline = process.memoryUsage();
  out({ event: 'bootstrapping', at: Date.now() });
  await engine.bootstrap(); // recoverAll() runs inside: it returns once every claimable run is driven
  out({ event: 'bootstrapped', at: Date.now(), seconds: round((performance.now() - t0) / 1000, 2) });

  const report = () => {
    mem.stop();
    (globalThis as { gc?: () => void }).gc?.();
    const afterGc = process.memoryUsage();
    const snap = engine.healthSnapshot();
    out({
      event: 'report',
      // MiB: peaks of the 200 ms samples; before bootstrap(); at the end, after a full GC.
      peakMiB: mib(mem.peak),
      beforeBootstrapMiB: mib({ rss: baseline.rss, heapUsed: baseline.heapUsed }),
      atEndAfterGcMiB: mib({ rss: afterGc.rss, heapUsed: afterGc.heapUsed }),
      memorySamples: mem.samples,
      ...renewalFigures(passes, firstClaimAt, ttlMs, t0),
      renewalFailures,
      maxClaimsHeld: maxActive,
      claimAttempts: attempts,
      warnings: Object.fromEntries(warnings),
      logged: Object.fromEntries(logs),
      claimsHeld: snap.claimsHeld,
      liveWorkflows: snap.liveWorkflows,
      // [s since bootstrap, claims held, RSS MiB, heap used MiB]
      memoryTimeline: mem.timeline,
    });
  };
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d: string) => {
    if (d.includes('report')) report();
    // Exit without dispose(): the claims stay in the database as a crash leaves them.
    if (d.includes('exit')) process.exit(0);
  });
  exitWithParent();
}

// ---------------------------------------------------------------- the parent

async function one<T>(c: Client, sql: string, params: unknown[] = []): Promise<T> {
  return (await c.query(sql, params)).rows[0] as T;
}

/** Polls a count until it is 0; returns the seconds it took. */
async function untilZero(c: Client, sql: string, params: unknown[]): Promise<number> {
  const t0 = performance.now();
  while ((await one<{ n: number }>(c, sql, params)).n > 0) await sleep(250);
  return round((performance.now() - t0) / 1000, 1);
}

/** Until no claim of `engineId` is live or within the takeover grace: the crash is complete. */
const waitExpired = (c: Client, engineId: string, graceMs: number) =>
  untilZero(
    c,
    `SELECT count(*)::int AS n FROM ${SCHEMA}.weft_workflow_claims
     WHERE engine_id = $1 AND expires_at + $2 * interval '1 millisecond' >= clock_timestamp()`,
    [engineId, graceMs],
  );

async function seed(url: string, c: Client, count: number) {
  const creatorChild = new Child(SELF, [], { RECOVERY_ROLE: 'creator', DATABASE_URL: url, COUNT: String(count) });
  await creatorChild.next('bootstrapped');
  // Parked = its sleep timer is written (the commit after the step).
  const sql = `SELECT ($1 - count(*))::int AS n FROM ${SCHEMA}.weft_timers WHERE kind = 'sleep'`;
  const startAndParkSeconds = await untilZero(c, sql, [count]);
  creatorChild.proc.kill('SIGKILL'); // the crash: claims left as they were, expiring
  const claimsExpiredAfterKillSeconds = await waitExpired(c, CREATOR.engineId, 2 * CREATOR.renewMs);
  const rows = await c.query(
    `SELECT (SELECT count(*) FROM ${SCHEMA}.weft_workflows WHERE status = 'running')::int AS running,
            (SELECT count(*) FROM ${SCHEMA}.weft_timers WHERE kind = 'sleep')::int AS timers,
            (SELECT count(*) FROM ${SCHEMA}.weft_workflow_claims WHERE engine_id = $1)::int AS claims`,
    [CREATOR.engineId],
  );
  return { through: 'engine', startAndParkSeconds, claimsExpiredAfterKillSeconds, ...rows.rows[0] };
}

type Sample = { at: number; held: number; headroomMs: number | null; expired: number };

/** The parent's view, every 200 ms: the engine's claims, how close the nearest is to expiry. */
class ClaimSampler {
  readonly samples: Sample[] = [];
  readonly queryMs: number[] = [];
  claimedAllAt: number | null = null;
  private lastGrowthAt = Date.now();

  constructor(
    private readonly c: Client,
    private readonly engineId: string,
    private readonly target: number,
  ) {}

  async sample(): Promise<Sample> {
    const q0 = performance.now();
    const s = await one<{ held: number; headroom_ms: number | null; expired: number }>(
      this.c,
      `SELECT count(*)::int AS held, count(*) FILTER (WHERE expires_at <= clock_timestamp())::int AS expired,
              (EXTRACT(EPOCH FROM min(expires_at) - clock_timestamp()) * 1000)::float8 AS headroom_ms
       FROM ${SCHEMA}.weft_workflow_claims WHERE engine_id = $1`,
      [this.engineId],
    );
    this.queryMs.push(performance.now() - q0);
    const now = Date.now();
    const last = this.samples.at(-1);
    if (last && s.held > last.held) this.lastGrowthAt = now;
    const sample = { at: now, held: s.held, headroomMs: s.headroom_ms, expired: s.expired };
    this.samples.push(sample);
    if (this.claimedAllAt === null && s.held >= this.target) this.claimedAllAt = now;
    return sample;
  }

  get stuck(): boolean {
    return this.claimedAllAt === null && Date.now() - this.lastGrowthAt > STUCK_MS;
  }

  figures(t0: number) {
    const withClaims = this.samples.filter((s) => s.headroomMs !== null);
    const headrooms = withClaims.map((s) => s.headroomMs!);
    const last = this.samples.at(-1)!;
    return {
      claimAllSeconds: this.claimedAllAt === null ? null : round((this.claimedAllAt - t0) / 1000, 2),
      maxClaimsHeld: Math.max(...this.samples.map((s) => s.held)),
      minHeadroomMs: headrooms.length ? round(Math.min(...headrooms), 0) : null,
      samplesWithExpiredClaims: withClaims.filter((s) => s.expired > 0).length,
      samples: this.samples.length,
      sampleQueryMsP50: round(median(this.queryMs), 1),
      observedAfterClaimAllSeconds: this.claimedAllAt === null ? 0 : round((last.at - this.claimedAllAt) / 1000, 1),
    };
  }
}

/** After the run: claims held, and claims whose epoch moved by more than the one takeover. */
async function claimsAtEnd(c: Client, engineId: string) {
  return one<{ held: number; retaken: number; others: number }>(
    c,
    `SELECT count(*) FILTER (WHERE c.engine_id = $1)::int AS held,
            count(*) FILTER (WHERE c.epoch > b.epoch + 1)::int AS retaken,
            count(*) FILTER (WHERE c.engine_id <> $1 AND c.expires_at > clock_timestamp())::int AS others
     FROM ${SCHEMA}.weft_workflow_claims c JOIN bench_epochs b USING (workflow_id)`,
    [engineId],
  );
}

/** One recovery: a fresh engine process, sampled from here until OBSERVE_PERIODS after it holds `target`. */
/**
 * The recovering engine's node flags: a heap bound as a 300 MB container gives one (V8 sizes its
 * heap from the machine's memory otherwise, 24 GiB here, and collects late). RECOVERY_ENGINE_FLAGS
 * overrides (--cpu-prof, another bound); the 'unbounded' run has none.
 */
const BOUNDED_FLAGS = process.env.RECOVERY_ENGINE_FLAGS ?? '--max-old-space-size=160';

async function recover(url: string, c: Client, total: number, maxConcurrent: number, engineId: string, flags: string) {
  const target = Math.min(total, maxConcurrent);
  // Each claim's epoch before: one taken more than once during the run moved by more than 1.
  await c.query(
    `DROP TABLE IF EXISTS bench_epochs; CREATE TABLE bench_epochs AS SELECT workflow_id, epoch FROM ${SCHEMA}.weft_workflow_claims`,
  );
  const engine = new Child(SELF, flags.split(' ').filter(Boolean), {
    RECOVERY_ROLE: 'engine',
    DATABASE_URL: url,
    ENGINE_ID: engineId,
    TTL_MS: String(RECOVERY.ttlMs),
    RENEW_MS: String(RECOVERY.renewMs),
    MAX_CONCURRENT: String(maxConcurrent),
  });
  const spawnedAt = Date.now();
  const t0 = (await engine.next('bootstrapping')).at as number;
  let bootstrapped: Record<string, unknown> | undefined;
  void engine.next('bootstrapped').then(
    (e) => (bootstrapped = e),
    () => undefined,
  );
  const sampler = new ClaimSampler(c, engineId, target);
  // Until it holds its target, recoverAll() has returned, and OBSERVE_PERIODS renewals passed.
  for (;;) {
    const s = await sampler.sample();
    if (sampler.claimedAllAt !== null && bootstrapped && s.at - sampler.claimedAllAt >= OBSERVE_PERIODS * RECOVERY.renewMs) break;
    if (sampler.stuck) {
      log(`stuck: ${s.held} of ${target} claimed, none for ${STUCK_MS / 1000} s`);
      break;
    }
    if (engine.exited) throw new Error('the recovering engine exited');
    await sleep(SAMPLE_MS);
  }
  engine.send('report');
  const report = await engine.next('report');
  const vmHwmMiB = engine.vmHwmMiB();
  await engine.exit();
  const end = await claimsAtEnd(c, engineId);
  const sampled = sampler.figures(t0);
  const peak = report.peakMiB as Record<string, number>;
  return {
    engineFlags: flags,
    maxConcurrent,
    target,
    ...sampled,
    claimAllFromSpawnSeconds: sampler.claimedAllAt === null ? null : round((sampler.claimedAllAt - spawnedAt) / 1000, 2),
    bootstrapSeconds: bootstrapped?.seconds ?? null,
    claimedAtEnd: end.held,
    maxClaimsHeldInEngine: report.maxClaimsHeld,
    minEngineHeadroomMs: report.minEngineHeadroomMs,
    renewalsLate: report.renewalsLate,
    lostClaims: Number(report.renewalFailures) + end.retaken,
    claimsRetaken: end.retaken,
    heldElsewhere: end.others,
    peakRssMiB: peak.rss,
    vmHwmMiB,
    peakHeapMiB: peak.heapUsed,
    heapAfterGcMiB: (report.atEndAfterGcMiB as Record<string, number>).heapUsed,
    rssBeforeBootstrapMiB: (report.beforeBootstrapMiB as Record<string, number>).rss,
    engine: report,
  };
}

async function parent(): Promise<void> {
  const total = Number(process.argv[2] ?? 100_000);
  const began = performance.now();
  const loadBefore = loadavg(); // the machine is shared: how busy it was around the run
  const result = await withFreshDatabase(async (url) => {
    const c = new Client({ connectionString: url });
    await c.connect();
    try {
      log(`seeding ${total} workflows through a '${CREATOR.engineId}' engine, then SIGKILL`);
      const seeding = await seed(url, c, total);
      log(`seeded: ${JSON.stringify(seeding)}`);
      const runs: Array<Awaited<ReturnType<typeof recover>>> = [];
      const plan = [
        { name: 'full', max: total, flags: BOUNDED_FLAGS },
        { name: 'limited', max: Math.min(20_000, total), flags: BOUNDED_FLAGS },
        { name: 'unbounded', max: total, flags: '' },
      ];
      for (const [i, { name, max, flags }] of plan.entries()) {
        // The engine before exited without releasing (a second crash): its claims expire first.
        if (i > 0) await waitExpired(c, `recovery-${plan[i - 1].name}`, 2 * RECOVERY.renewMs);
        log(`recovery with maxConcurrentWorkflows = ${max}, node flags '${flags}'`);
        runs.push(await recover(url, c, total, max, `recovery-${name}`, flags));
        log(`${name}: ${JSON.stringify({ ...runs.at(-1), engine: undefined })}`);
      }
      return { seeding, full: runs[0], limited: runs[1], unbounded: runs[2] };
    } finally {
      for (const ch of children) if (!ch.exited) ch.proc.kill('SIGKILL');
      await c.end();
    }
  });
  const { full, limited, unbounded } = result;
  const within = (r: typeof full) =>
    r.claimedAtEnd === r.target && r.maxClaimsHeld <= r.maxConcurrent && Number(r.maxClaimsHeldInEngine) <= r.maxConcurrent;
  const onTime = (r: typeof full) => Number(r.renewalsLate) === 0 && r.samplesWithExpiredClaims === 0 && r.lostClaims === 0;
  const { engine: fullEngine, ...fullFigures } = full;
  const summary = {
    bench: 'recovery',
    workflows: total,
    ownership: 'workflow-lease',
    claimTtlMs: RECOVERY.ttlMs,
    renewIntervalMs: RECOVERY.renewMs,
    seeding: result.seeding,
    ...fullFigures,
    targets: {
      allClaimedWithinMax: within(full) && within(limited),
      renewalsNeverLate: onTime(full) && onTime(limited),
      memoryWithin300MB: full.vmHwmMiB <= 300 && full.peakRssMiB <= 300,
    },
    engine: fullEngine,
    limited,
    // The same recovery with no heap bound: V8 lets garbage pile up to a multiple of the live heap.
    unbounded: { ...unbounded, engine: undefined },
    runSeconds: round((performance.now() - began) / 1000, 1),
    machine: { ...machine(), loadAvgBefore: loadBefore.map((x) => round(x, 2)), loadAvgAfter: loadavg().map((x) => round(x, 2)) },
    at: new Date().toISOString(),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

const role = env('RECOVERY_ROLE');
const main = role === 'creator' ? creator : role === 'engine' ? recoveringEngine : parent;
main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
