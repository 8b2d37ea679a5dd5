/** A timer set on a WorkflowClock. */
export interface ClockTimer {
  clear(): void;
}

/**
 * The engine's one source of workflow time: `ctx.now()`, sleeps and wait timeouts, execution
 * deadlines, delayed starts, schedule fires and step retry backoff all read it. Claim and lease
 * expiry never do: they stay on the database's real clock (docs/testing.md#the-workflow-clock).
 *
 * Workflow time is this machine's time plus `offsetMs()`, and in SQL the database clock plus the
 * same offset, so storage writes and judges `fire_at`, `deadline`, `start_at` and
 * `next_fire_at` on it. Production uses `systemClock` (engine/clock.ts): offset 0. The testing
 * kit's clock moves the offset forward.
 */
export interface WorkflowClock {
  /** Workflow time, epoch ms. */
  now(): number;
  /** Workflow time minus real time, ms (0 in production); never decreases. */
  offsetMs(): number;
  /** Calls `fn` once workflow time has moved `ms` ahead of now. */
  setTimer(fn: () => void, ms: number): ClockTimer;
}

/** What storage needs of the clock: the offset it adds to the database clock. */
export type ClockOffset = () => number;
