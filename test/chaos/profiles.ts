import type { DriverOptions } from './driver.js';
import type { FaultPlan, FaultTiming } from './faults.js';
import { SHAPES, type WorkloadOptions } from './workload.js';

export interface ChaosProfile {
  name: string;
  seed: number;
  /** 'workflow-lease' (a claim per workflow) or 'lease' (one engine runs everything, the others stand by). */
  ownership: 'workflow-lease' | 'lease';
  engines: number;
  ttlMs: number;
  renewMs: number;
  timerPollMs: number;
  poolSize: number;
  /** The engines' shutdownGracePeriod (a SIGTERMed engine lets running steps finish this long). */
  shutdownGraceMs: number;
  /** Workflow types some slots do not register (a mixed deploy: resume through an engine without the type). */
  skipTypes?: Record<string, string[]>;
  workload: WorkloadOptions;
  driver: DriverOptions;
  faults: FaultPlan[];
  /** Periodic faults are scheduled up to this many ms after the workload starts... */
  faultHorizonMs: number;
  /** ...and, if set, go on until every workflow finished (soak). */
  faultsUntilDone: boolean;
  timing: Omit<FaultTiming, 'ttlMs' | 'renewMs' | 'ownership' | 'shutdownGraceMs'>;
  /** A running workflow with no write for longer than this is reported (anomaly: workflow_idle_too_long). */
  idleLimitMs: number;
  /** Give up waiting when nothing advanced for this long after the last fault... */
  stallMs: number;
  /**
   * ...and fail (run_stalled) when nothing advanced for this long while faults still ran: the
   * watchdog (watchdog.ts) stops the faults and dumps the unfinished workflows. CHAOS_STALL_WATCH_MS.
   */
  stallWatchMs: number;
  /** ...or when this long passed since the last fault (a healthy system needs seconds). */
  settleMs: number;
  /** Hard cap on the whole run. */
  maxRunMs: number;
}

const env = process.env;
const num = (name: string, d: number) => (env[name] ? Number(env[name]) : d);

/** CHAOS_MIX="cancelcleanup:4,txsteps=6": shape weights over the defaults (workload.ts), e.g. to soak one shape. */
function mixFromEnv(): WorkloadOptions['mix'] {
  if (!env.CHAOS_MIX) return undefined;
  const mix: Record<string, number> = {};
  for (const part of env.CHAOS_MIX.split(',')) {
    const [shape, weight] = part.split(/[:=]/);
    if (!(SHAPES as string[]).includes(shape) || !(Number(weight) >= 0)) throw new Error(`CHAOS_MIX: bad entry ${JSON.stringify(part)}`);
    mix[shape] = Number(weight);
  }
  return mix;
}

/** `npm run test:chaos` (part of `npm test`): every fault kind at least once, well under 3 minutes on 2 cores. */
export function smallProfile(): ChaosProfile {
  return {
    name: 'small',
    seed: num('CHAOS_SEED', Date.now() % 1_000_000),
    ownership: 'workflow-lease',
    engines: 3,
    ttlMs: 2000,
    renewMs: 500,
    timerPollMs: 200,
    poolSize: 8,
    shutdownGraceMs: 1000,
    skipTypes: { C: ['chaos.suspendable'] },
    workload: {
      workflows: num('CHAOS_WORKFLOWS', 240),
      steps: 5,
      stepMs: 120,
      sleepMs: 600,
      signals: 3,
      updates: 3,
      children: 2,
      mix: mixFromEnv(),
    },
    driver: {
      startWindowMs: 24_000,
      maxInFlightCalls: 64,
      maxActive: 10_000,
      messageGapMs: [150, 1200],
      updateTimeoutMs: 15_000,
      queryChance: 0.3,
    },
    faults: [
      { kind: 'sigkill', firstAtMs: 4_000, everyMs: 14_000, jitterMs: 1000, max: 2 },
      { kind: 'sigterm', firstAtMs: 6_000, everyMs: 10_000, jitterMs: 1000, max: 2 },
      { kind: 'sigstop', firstAtMs: 8_000, everyMs: 14_000, jitterMs: 1000, max: 2 },
      { kind: 'pg-restart-fast', firstAtMs: 12_500, everyMs: 60_000, max: 1 },
      { kind: 'pg-restart-immediate', firstAtMs: 26_500, everyMs: 60_000, max: 1 },
    ],
    faultHorizonMs: 30_000,
    faultsUntilDone: false,
    timing: { restartDelayMs: [0, 1000], pgDownMs: [200, 1500] },
    idleLimitMs: 15_000,
    stallMs: 30_000,
    stallWatchMs: num('CHAOS_STALL_WATCH_MS', 150_000),
    settleMs: 45_000,
    // A safety net only: a healthy run ends when every workflow did (35-60 s), a stuck one by the
    // stall rule; on a loaded machine everything takes longer and must not fail for it.
    maxRunMs: num('CHAOS_MAX_RUN_MS', 480_000),
  };
}

/**
 * `npm run chaos:soak`: 10,000 workflows x 5 steps, 3 engines, SIGKILL every 10 s, SIGTERM every
 * 20 s, SIGSTOP every 30 s, PostgreSQL restart every 60 s (alternately fast and immediate), until
 * every workflow finished. CHAOS_WORKFLOWS, CHAOS_SEED, CHAOS_MAX_ACTIVE, CHAOS_MIX override.
 */
export function soakProfile(): ChaosProfile {
  const workflows = num('CHAOS_WORKFLOWS', 10_000);
  return {
    name: 'soak',
    seed: num('CHAOS_SEED', Date.now() % 1_000_000),
    ownership: 'workflow-lease',
    engines: num('CHAOS_ENGINES', 3),
    ttlMs: 3000,
    renewMs: 1000,
    timerPollMs: 250,
    poolSize: 10,
    shutdownGraceMs: 2000,
    skipTypes: { C: ['chaos.suspendable'] },
    workload: { workflows, steps: 5, stepMs: 100, sleepMs: 1000, signals: 3, updates: 3, children: 2, mix: mixFromEnv() },
    driver: {
      startWindowMs: num('CHAOS_START_WINDOW_MS', workflows * 20),
      maxInFlightCalls: 64,
      maxActive: num('CHAOS_MAX_ACTIVE', 1200),
      messageGapMs: [200, 2000],
      updateTimeoutMs: 20_000,
      queryChance: 0.2,
    },
    faults: [
      { kind: 'sigkill', firstAtMs: 10_000, everyMs: 10_000, jitterMs: 1000 },
      { kind: 'sigterm', firstAtMs: 15_000, everyMs: 20_000, jitterMs: 2000 },
      { kind: 'sigstop', firstAtMs: 25_000, everyMs: 30_000, jitterMs: 2000 },
      { kind: 'pg-restart-fast', firstAtMs: 45_000, everyMs: 120_000, jitterMs: 3000 },
      { kind: 'pg-restart-immediate', firstAtMs: 105_000, everyMs: 120_000, jitterMs: 3000 },
    ],
    faultHorizonMs: 24 * 3600_000,
    faultsUntilDone: true,
    timing: { restartDelayMs: [0, 2000], pgDownMs: [500, 3000] },
    idleLimitMs: 30_000,
    stallMs: 60_000,
    stallWatchMs: num('CHAOS_STALL_WATCH_MS', 180_000),
    settleMs: 600_000,
    maxRunMs: num('CHAOS_MAX_RUN_MS', 4 * 3600_000),
  };
}

/**
 * Ownership 'lease' (`npm test` too): one engine holds the store-wide lease and runs everything,
 * two stand by (they take signals, updates and queries) and take over when it dies, stops or is
 * paused past the lease TTL; a deposed holder halts and stops itself 1 s later (a new incarnation
 * then stands by). Faults aim at the holder three times in four.
 */
export function leaseSmallProfile(): ChaosProfile {
  const p = smallProfile();
  return {
    ...p,
    name: 'lease-small',
    ownership: 'lease',
    skipTypes: undefined,
    workload: { ...p.workload, workflows: num('CHAOS_WORKFLOWS', 160) },
    driver: { ...p.driver, startWindowMs: 20_000 },
    faults: [
      { kind: 'sigkill', firstAtMs: 4_000, everyMs: 12_000, jitterMs: 1000, max: 2 },
      { kind: 'sigterm', firstAtMs: 8_000, everyMs: 12_000, jitterMs: 1000, max: 2 },
      { kind: 'sigstop', firstAtMs: 12_000, everyMs: 60_000, jitterMs: 1000, max: 1 },
      { kind: 'pg-restart-fast', firstAtMs: 10_500, everyMs: 60_000, max: 1 },
      { kind: 'pg-restart-immediate', firstAtMs: 22_500, everyMs: 60_000, max: 1 },
    ],
    faultHorizonMs: 26_000,
  };
}

/** `npm run chaos:soak -- --profile lease`: the soak under ownership 'lease' (CHAOS_WORKFLOWS default 3,000). */
export function leaseSoakProfile(): ChaosProfile {
  const workflows = num('CHAOS_WORKFLOWS', 3_000);
  const p = soakProfile();
  return {
    ...p,
    name: 'lease',
    ownership: 'lease',
    skipTypes: undefined,
    workload: { ...p.workload, workflows },
    driver: { ...p.driver, startWindowMs: num('CHAOS_START_WINDOW_MS', workflows * 40), maxActive: num('CHAOS_MAX_ACTIVE', 600) },
  };
}

export const PROFILES: Record<string, () => ChaosProfile> = {
  small: smallProfile,
  soak: soakProfile,
  'lease-small': leaseSmallProfile,
  lease: leaseSoakProfile,
};
