import type { DriverOptions } from './driver';
import type { FaultPlan, FaultTiming } from './faults';
import type { WorkloadOptions } from './workload';

export interface ChaosProfile {
  name: string;
  seed: number;
  engines: number;
  ttlMs: number;
  renewMs: number;
  timerPollMs: number;
  poolSize: number;
  workload: WorkloadOptions;
  driver: DriverOptions;
  faults: FaultPlan[];
  /** Periodic faults are scheduled up to this many ms after the workload starts... */
  faultHorizonMs: number;
  /** ...and, if set, go on until every workflow finished (soak). */
  faultsUntilDone: boolean;
  timing: Omit<FaultTiming, 'ttlMs' | 'renewMs'>;
  /** A running workflow with no write for longer than this is reported (anomaly: workflow_idle_too_long). */
  idleLimitMs: number;
  /** Give up waiting when nothing advanced for this long after the last fault... */
  stallMs: number;
  /** ...or when this long passed since the last fault (a healthy system needs seconds). */
  settleMs: number;
  /** Hard cap on the whole run. */
  maxRunMs: number;
}

const env = process.env;
const num = (name: string, d: number) => (env[name] ? Number(env[name]) : d);

/** `npm run test:chaos` (part of `npm test`): every fault kind at least once, well under 3 minutes on 2 cores. */
export function smallProfile(): ChaosProfile {
  return {
    name: 'small',
    seed: num('CHAOS_SEED', Date.now() % 1_000_000),
    engines: 3,
    ttlMs: 2000,
    renewMs: 500,
    timerPollMs: 200,
    poolSize: 8,
    workload: { workflows: num('CHAOS_WORKFLOWS', 240), steps: 5, stepMs: 120, sleepMs: 600, signals: 3, updates: 3, children: 2 },
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
      { kind: 'sigstop', firstAtMs: 8_000, everyMs: 14_000, jitterMs: 1000, max: 2 },
      { kind: 'pg-restart-fast', firstAtMs: 12_500, everyMs: 60_000, max: 1 },
      { kind: 'pg-restart-immediate', firstAtMs: 26_500, everyMs: 60_000, max: 1 },
    ],
    faultHorizonMs: 30_000,
    faultsUntilDone: false,
    timing: { restartDelayMs: [0, 1000], pgDownMs: [200, 1500] },
    idleLimitMs: 15_000,
    stallMs: 30_000,
    settleMs: 45_000,
    maxRunMs: 170_000,
  };
}

/**
 * `npm run chaos:soak`: 10,000 workflows x 5 steps, 3 engines, SIGKILL every 10 s, SIGSTOP every
 * 30 s, PostgreSQL restart every 60 s (alternately fast and immediate), until every workflow
 * finished. CHAOS_WORKFLOWS, CHAOS_SEED, CHAOS_MAX_ACTIVE override.
 */
export function soakProfile(): ChaosProfile {
  const workflows = num('CHAOS_WORKFLOWS', 10_000);
  return {
    name: 'soak',
    seed: num('CHAOS_SEED', Date.now() % 1_000_000),
    engines: num('CHAOS_ENGINES', 3),
    ttlMs: 3000,
    renewMs: 1000,
    timerPollMs: 250,
    poolSize: 10,
    workload: { workflows, steps: 5, stepMs: 100, sleepMs: 1000, signals: 3, updates: 3, children: 2 },
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
      { kind: 'sigstop', firstAtMs: 25_000, everyMs: 30_000, jitterMs: 2000 },
      { kind: 'pg-restart-fast', firstAtMs: 45_000, everyMs: 120_000, jitterMs: 3000 },
      { kind: 'pg-restart-immediate', firstAtMs: 105_000, everyMs: 120_000, jitterMs: 3000 },
    ],
    faultHorizonMs: 24 * 3600_000,
    faultsUntilDone: true,
    timing: { restartDelayMs: [0, 2000], pgDownMs: [500, 3000] },
    idleLimitMs: 30_000,
    stallMs: 60_000,
    settleMs: 600_000,
    maxRunMs: num('CHAOS_MAX_RUN_MS', 4 * 3600_000),
  };
}
