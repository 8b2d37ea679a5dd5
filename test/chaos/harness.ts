// The chaos harness (issue #8): N engine processes (apps/worker) on a private PostgreSQL cluster
// the harness owns, W workflows of mixed shapes, faults on a seeded schedule, then invariant
// checks from the database and the side-effect ledger, and a JSON summary.
import { Client } from 'pg';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { sourcePath } from '../support/node-ts.js';
import { faultWindows, runChecks } from './checks.js';
import { PgCluster } from './cluster.js';
import { loadRunData } from './data.js';
import { HarnessDb } from './db.js';
import { Driver } from './driver.js';
import { Fleet } from './engines.js';
import { ENGINE_FAULTS, FaultInjector, FaultRecord } from './faults.js';
import { failoverTimes, pgRecovery } from './metrics.js';
import { Monitor } from './monitor.js';
import type { ChaosProfile } from './profiles.js';
import { auditDdl, LEDGER_SCHEMA, ledgerDdl } from './schema.js';
import { diagnoseStuck } from './stuck.js';
import { buildSummary, ChaosSummary } from './summary.js';
import { rng, until } from './util.js';
import { buildStallReport, describeStall, isStalled, readStallState, stallLines, type StallReport } from './watchdog.js';
import { isDriven, planWorkload, type PlannedWorkflow } from './workload.js';

const WEFT = 'weft';
const SLOTS = 'ABCDEFGHIJ';

export interface RunOptions {
  log?: (m: string) => void;
  /** Where the JSON summary is written (default test/chaos/results). */
  resultsDir?: string;
  /** Keep the cluster's data directory (for inspection) instead of deleting it. */
  keepCluster?: boolean;
}

async function createDatabase(cluster: PgCluster): Promise<string> {
  const c = new Client({ connectionString: cluster.url() });
  await c.connect();
  try {
    await c.query('CREATE DATABASE chaos');
  } finally {
    await c.end();
  }
  return cluster.url('chaos');
}

function workerEnv(p: ChaosProfile, url: string, slot: string): Record<string, string> {
  return {
    DATABASE_URL: url,
    WEFT_SCHEMA: WEFT,
    LEDGER_SCHEMA,
    OWNERSHIP: p.ownership,
    CLAIM_TTL_MS: String(p.ttlMs),
    CLAIM_RENEW_MS: String(p.renewMs),
    LEASE_TTL_MS: String(p.ttlMs),
    LEASE_RENEW_MS: String(p.renewMs),
    // A standby waits in bootstrap() until the lease is free, however long that takes.
    LEASE_WAIT_MS: String(24 * 3600_000),
    LEASE_LOST_EXIT_MS: '1000',
    TIMER_POLL_MS: String(p.timerPollMs),
    POOL_SIZE: String(p.poolSize),
    SHUTDOWN_GRACE_MS: String(p.shutdownGraceMs),
    // Heartbeats saved often, so a step taken over or retried has recent progress to resume from.
    HEARTBEAT_FLUSH_MS: '200',
    STARTUP_DEADLINE_MS: '180000',
    SKIP_TYPES: (p.skipTypes?.[slot] ?? []).join(','),
  };
}

/** The first engines: under 'lease' one takes the lease and the others must be standing by. */
async function startFleet(p: ChaosProfile, fleet: Fleet): Promise<void> {
  if (p.ownership !== 'lease') {
    const first = Array.from({ length: p.engines }, (_, i) => fleet.spawn(SLOTS[i]));
    await Promise.all(first.map((e) => e.ready));
    return;
  }
  await fleet.spawn(SLOTS[0]).ready;
  const rest = Array.from({ length: p.engines - 1 }, (_, i) => fleet.spawn(SLOTS[i + 1]));
  const ok = await until(() => rest.every((e) => e.state === 'standby'), Date.now() + 180_000, 100);
  if (!ok) throw new Error(`standbys did not come up: ${rest.map((e) => `${e.engineId}=${e.state}`).join(', ')}`);
}

/** Engines that exit without the harness asking are crashes: recorded as a fault and restarted. */
function restartCrashed(fleet: Fleet, faults: FaultRecord[], log: (m: string) => void): void {
  fleet.onCrash = (e, rec) => {
    faults.push({
      kind: 'engine-crash',
      at: rec.at,
      engineId: e.engineId,
      pid: rec.pid,
      detail: { code: rec.code, signal: rec.signal, stderrTail: rec.stderrTail },
    });
    log(`engine ${e.engineId} CRASHED (code ${rec.code}, signal ${rec.signal}); restarting`);
    setTimeout(() => fleet.spawn(e.slot), 200);
  };
  // Ownership 'lease': a deposed holder halts and stops itself; a new incarnation stands by.
  fleet.onLeaseLostExit = (e, rec) => {
    faults.push({ kind: 'lease-lost-exit', at: rec.at, engineId: e.engineId, pid: rec.pid, detail: { leaseLostAt: e.leaseLostAt } });
    log(`engine ${e.engineId} lost the lease and stopped itself; restarting`);
    setTimeout(() => fleet.spawn(e.slot), 200);
  };
}

interface Phase {
  plan: PlannedWorkflow[];
  db: HarnessDb;
  fleet: Fleet;
  driver: Driver;
  injector: FaultInjector;
  monitor: Monitor;
  driving: Promise<void>;
  faulting: Promise<void>;
  /** The unfinished workflows when the run ended without all of them (the watchdog's dump). */
  stall: StallReport | null;
  /** The stall watchdog fired: the run failed for it (violation run_stalled). */
  stalled: boolean;
}

/** One progress line of the client side: the engines as the harness sees them, calls in flight, scripts waiting for an engine. */
function clientState(ph: Phase): string {
  const engines = [...ph.fleet.slots.values()].map((e) => `${e.engineId}=${e.state}`).join(' ');
  let waiting = 0;
  for (const id of ph.driver.scriptsRunning) if (ph.driver.phases.get(id)?.what.endsWith('waiting for a live engine')) waiting++;
  const d = ph.driver;
  return `client: engines ${engines}; ${d.callsInFlight} calls in flight, ${d.scriptsRunning.size} scripts running (${waiting} waiting for a live engine), ${d.started.size} starts acknowledged`;
}

/** Dumps the unfinished workflows with the client's record of each (see watchdog.ts). */
async function stallReport(p: ChaosProfile, ph: Phase): Promise<StallReport> {
  let timer: NodeJS.Timeout | undefined;
  const read = await Promise.race([
    readStallState(ph.db, WEFT, p.ownership).catch((err: Error) => err.message),
    new Promise<string>((r) => (timer = setTimeout(() => r('no answer in 30 s'), 30_000))),
  ]);
  clearTimeout(timer);
  const { statuses, lease } = typeof read === 'string' ? { statuses: new Map<string, string>(), lease: null } : read;
  return buildStallReport({
    plan: ph.plan,
    statuses,
    driver: ph.driver,
    engines: [...ph.fleet.slots.values()],
    lease,
    quietMs: Date.now() - ph.monitor.lastProgressAt,
    monitorLastPollAgoMs: Date.now() - ph.monitor.lastPollAt,
    statusesUnread: typeof read === 'string' ? read : undefined,
  });
}

/**
 * Waits until every planned workflow finished and the scheduled faults ran; gives up when, after
 * the last fault, nothing advanced for `stallMs`, the settle deadline passed, or the run cap; and
 * fails when nothing advanced for `stallWatchMs` while faults ran (the stall watchdog).
 */
async function awaitCompletion(p: ChaosProfile, ph: Phase, total: number, startedAt: number, log: (m: string) => void): Promise<string> {
  let faultsDoneAt = 0;
  let drivenAt = 0;
  void ph.faulting.then(() => (faultsDoneAt = Date.now()));
  void ph.driving.then(() => (drivenAt = Date.now()));
  let lastStateLog = Date.now();
  const reason = await until(
    async () => {
      if (Date.now() - lastStateLog >= 10_000) {
        lastStateLog = Date.now();
        log(clientState(ph));
      }
      // And the client is through: a reused id counts as done between its first run and its purge.
      if (ph.monitor.done >= total && drivenAt) {
        if (p.faultsUntilDone) ph.injector.stop();
        if (faultsDoneAt) return 'all workflows finished';
      }
      // Faults "until done" must not outlast a workflow nobody will finish (a resume the driver
      // gave up on, reported as resume_gave_up): once the driver is through and nothing advanced
      // for stallMs, the faults stop and the stall rule below ends the run.
      if (p.faultsUntilDone && drivenAt && Date.now() - ph.monitor.lastProgressAt > p.stallMs) ph.injector.stop();
      // The watchdog: faults "until done" also outlast a client that waits forever (a start for
      // an engine that never comes), and no rule above applies while the driver is not through.
      const watch = { lastProgressAt: ph.monitor.lastProgressAt, waitingForTail: ph.driver.waitingForTail, stallWatchMs: p.stallWatchMs };
      if (isStalled({ ...watch, now: Date.now(), faultsRunning: !faultsDoneAt })) {
        ph.injector.stop();
        ph.stalled = true;
        ph.stall = await stallReport(p, ph);
        return describeStall(ph.stall);
      }
      // Counted from the end of the faults too: the held-back last starts only go then, after a
      // quiet spell that must not count as a stall.
      if (faultsDoneAt && Date.now() - Math.max(ph.monitor.lastProgressAt, faultsDoneAt) > p.stallMs)
        return `no progress for ${p.stallMs} ms`;
      if (faultsDoneAt && Date.now() - faultsDoneAt > p.settleMs) return `not all finished ${p.settleMs} ms after the last fault`;
      if (Date.now() - startedAt > p.maxRunMs) return `run cap of ${p.maxRunMs} ms reached`;
      return null;
    },
    Infinity,
    250,
  );
  log(`workload phase over: ${reason}`);
  if (reason !== 'all workflows finished') ph.stall ??= await stallReport(p, ph);
  if (ph.stall) for (const line of stallLines(ph.stall)) log(line);
  ph.injector.stop();
  ph.driver.stop();
  await ph.faulting;
  await raceTimeout(ph.driving, 30_000);
  return reason!;
}

/** The top-level workflows a bounded run holds back until its faults are over: 5 %, at least 3. */
function tailCount(plan: PlannedWorkflow[]): number {
  return Math.max(3, Math.ceil(plan.filter(isDriven).length * 0.05));
}

/** Waits for `p` at most `ms` (and leaves no timer behind). */
async function raceTimeout(p: Promise<unknown>, ms: number): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise((r) => (t = setTimeout(r, ms)))]);
  clearTimeout(t);
}

/** Runs one chaos profile end to end; returns (and writes) the JSON summary. */
export async function runChaos(p: ChaosProfile, opts: RunOptions = {}): Promise<ChaosSummary> {
  const log = opts.log ?? ((m: string) => process.stderr.write(`[chaos] ${m}\n`));
  const t0 = Date.now();
  log(`profile ${p.name}, seed ${p.seed}: ${p.engines} engines, ${p.workload.workflows} workflows`);
  const cluster = await PgCluster.create({ maxConnections: 100 + p.engines * (p.poolSize + 8) });
  let fleet: Fleet | undefined;
  let db: HarnessDb | undefined;
  try {
    const url = await createDatabase(cluster);
    db = new HarnessDb(url);
    for (const sql of ledgerDdl()) await db.query(sql);
    const faults: FaultRecord[] = [];
    fleet = new Fleet(process.env.CHAOS_WORKER_SCRIPT ?? sourcePath('apps/worker/src/main.ts'), (slot) => workerEnv(p, url, slot));
    restartCrashed(fleet, faults, log);
    await startFleet(p, fleet);
    for (const sql of auditDdl(WEFT, p.ownership)) await db.query(sql);
    const plan = planWorkload(rng(p.seed), p.workload);
    const monitor = new Monitor(db, WEFT, log, plan.length);
    monitor.start();
    const driver: Driver = new Driver(fleet, db, WEFT, p.driver, rng(p.seed + 1), () => driver.started.size - monitor.topDone);
    const timing = { ...p.timing, ttlMs: p.ttlMs, renewMs: p.renewMs, ownership: p.ownership, shutdownGraceMs: p.shutdownGraceMs };
    const injector = new FaultInjector(fleet, cluster, db, WEFT, timing, rng(p.seed + 2), log);
    const schedule = FaultInjector.schedule(p.faults, rng(p.seed + 3), p.faultHorizonMs);
    const workStart = Date.now();
    driver.faultTimes = schedule.filter((f) => ENGINE_FAULTS.includes(f.kind)).map((f) => workStart + f.atMs);
    const faulting = injector.run(schedule, workStart);
    // A bounded run's last starts wait for its faults: every scheduled fault lands inside the workload.
    if (!p.faultsUntilDone) driver.holdTailUntil(faulting, tailCount(plan));
    const ph: Phase = { plan, db, fleet, driver, injector, monitor, driving: driver.run(plan), faulting, stall: null, stalled: false };
    const endReason = await awaitCompletion(p, ph, plan.length, workStart, log);
    const workloadMs = Date.now() - workStart;
    await monitor.poll().catch(() => undefined);
    await monitor.stop();
    const stuck = monitor.done < plan.length ? await diagnoseStuck(db, WEFT, fleet) : { count: 0, samples: [] };
    const shutdown = await fleet.shutdown(20_000);
    faults.push(...injector.records);
    faults.sort((a, b) => a.at - b.at);
    log('checking invariants');
    const data = await loadRunData(db, WEFT, p.ownership);
    data.clientLog = driver.log;
    const claimWindowMs = p.ttlMs + 3 * p.renewMs;
    const checks = runChecks(plan, data, faultWindows(faults, fleet.exits), driver, {
      idleLimitMs: p.idleLimitMs,
      claimWindowMs,
      ttlMs: p.ttlMs,
      renewMs: p.renewMs,
      shutdownGraceMs: p.shutdownGraceMs,
    });
    if (ph.stalled) checks.violations.add('run_stalled', { reason: endReason, byClientPhase: ph.stall?.byClientPhase });
    const boundMs = p.ttlMs + 2 * p.renewMs + 1.2 * p.renewMs;
    const summary = buildSummary({
      profile: p,
      plan,
      data,
      checks,
      faults,
      fleet,
      driver,
      stuck,
      shutdown,
      endReason,
      stall: ph.stall,
      workloadMs,
      totalMs: Date.now() - t0,
      failover: await failoverTimes(db, faults, boundMs),
      pgRecovery: await pgRecovery(db, faults),
    });
    writeResults(summary, opts.resultsDir);
    return summary;
  } finally {
    fleet?.killAll();
    await db?.close();
    if (!opts.keepCluster) await cluster.destroy();
    else log(`cluster kept at ${cluster.dir} (port ${cluster.port})`);
  }
}

const KEEP_RESULTS = 50;

function writeResults(summary: ChaosSummary, dir = path.join(import.meta.dirname, 'results')): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    const old = fs.readdirSync(dir).filter((f) => f.endsWith('.json'));
    old.sort((a, b) => fs.statSync(path.join(dir, a)).mtimeMs - fs.statSync(path.join(dir, b)).mtimeMs);
    for (const f of old.slice(0, Math.max(0, old.length - KEEP_RESULTS + 1))) fs.rmSync(path.join(dir, f), { force: true });
    const file = path.join(dir, `${summary.profile}-${new Date().toISOString().replace(/[:.]/g, '-')}-seed${summary.seed}.json`);
    fs.writeFileSync(file, `${JSON.stringify(summary, null, 2)}\n`);
    summary.resultsFile = path.relative(process.cwd(), file);
  } catch {
    /* the summary is printed anyway */
  }
}
