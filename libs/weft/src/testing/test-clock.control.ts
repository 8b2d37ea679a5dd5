import { type Duration, parseDuration } from '../common/duration.js';
import { InvalidArgumentError, TestClockStuckError } from '../common/errors.js';
import type { WeftEngine } from '../engine/engine.js';
import type { SkippingClock } from './test-clock.js';

/** Jumps one advance may take before it gives up (a schedule every second over a year is too many). */
const MAX_JUMPS = 10_000;

export interface TestClockOptions {
  /** Real time an advance waits for the runs it woke to park or end (default 30s). */
  settleTimeout?: Duration;
}

/**
 * `env.clock`: the environment's workflow time. `advance('30d')` moves it ahead and fires what
 * falls due on the way (timers, wait timeouts, delayed starts, execution deadlines, schedule
 * fires, retry backoffs) in due order, each time waiting for the runs it woke to park or end.
 */
export class WeftTestClock {
  private readonly settleMs: number;
  /** Advances run one at a time (autoSkip's and the test's). */
  private queue: Promise<unknown> = Promise.resolve();

  /** @internal Built by WeftTestEnvironment. */
  constructor(
    private readonly clock: SkippingClock,
    private readonly engine: () => WeftEngine,
    o: TestClockOptions = {},
  ) {
    this.settleMs = parseDuration(o.settleTimeout ?? '30s', 'settleTimeout');
  }

  /** Workflow time now (what ctx.now() would record). */
  now(): Date {
    return new Date(this.clock.now());
  }

  /** Moves workflow time ahead by `duration` ('30d', '1h', ms); see the class. */
  advance(duration: Duration): Promise<void> {
    const ms = parseDuration(duration, 'advance duration');
    // Measured from when the runs started before it have parked: a sleep they are still
    // recording counts from its own start, and must fall within the advance.
    return this.serial(async () => {
      await this.settled();
      await this.moveTo(this.clock.now() + ms);
    });
  }

  /** Moves workflow time ahead to `at` (a time in the past does nothing but settle). */
  advanceTo(at: Date): Promise<void> {
    if (!(at instanceof Date) || Number.isNaN(at.getTime())) throw new InvalidArgumentError('advanceTo', 'needs a valid Date');
    return this.serial(() => this.moveTo(at.getTime()));
  }

  /** Waits until every run woken so far has parked or ended, with nothing due left unfired. */
  settle(): Promise<void> {
    return this.serial(() => this.settled());
  }

  /**
   * @internal The next thing due after now on workflow time (a stored timer, a schedule, a
   * backoff), or null. What is due already was fired by the last settle (or cannot be: a timer of
   * a type no engine here runs), so it is not waited for again.
   */
  async nextDueAt(): Promise<number | null> {
    const stored = await this.engine().nextDueAt(this.clock.now());
    const own = this.clock.nextTimerAt();
    if (stored === null) return own;
    return own === null ? stored : Math.min(stored, own);
  }

  /** @internal autoSkip's jump to the next thing due, if it is still the next one. */
  skipTo(at: number): Promise<void> {
    return this.serial(() => this.moveTo(at));
  }

  private serial(fn: () => Promise<void>): Promise<void> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async moveTo(target: number): Promise<void> {
    await this.settled();
    for (let jumps = 0; ; jumps++) {
      const next = await this.nextDueAt();
      if (next === null || next > target) break;
      if (jumps >= MAX_JUMPS) {
        throw new TestClockStuckError(
          `more than ${MAX_JUMPS} due times before ${new Date(target).toISOString()}; advance in smaller steps`,
        );
      }
      // Each due time in turn: what it wakes runs, and may set earlier timers, before the next.
      // One ms past it: the database keeps microseconds, a Date only milliseconds.
      this.clock.jumpTo(Math.max(Math.min(next + 1, target), this.clock.now()));
      await this.settled();
    }
    this.clock.jumpTo(target);
    await this.settled();
  }

  /**
   * Fires what is due now and waits for quiet: no run busy, nothing loading or firing. Repeated
   * until a fire finds nothing more to do (a woken run may start a child, signal another, or
   * leave a message that the next poll delivers).
   */
  private async settled(): Promise<void> {
    const engine = this.engine();
    const until = Date.now() + this.settleMs;
    let quietRounds = 0;
    while (quietRounds < 2) {
      await engine.fireDue();
      await this.quiet(engine, until);
      quietRounds = (await this.stillQuiet(engine)) ? quietRounds + 1 : 0;
    }
  }

  private async quiet(engine: WeftEngine, until: number): Promise<void> {
    while (!engine.isQuiet) {
      if (Date.now() > until) {
        throw new TestClockStuckError(
          `runs were still busy after ${this.settleMs} ms of real time (a step body that does not finish, or a settleTimeout too short)`,
        );
      }
      await new Promise((r) => setTimeout(r, 1));
    }
  }

  /** Quiet across a turn of the event loop (a commit's reply or a NOTIFY may land in between). */
  private async stillQuiet(engine: WeftEngine): Promise<boolean> {
    await new Promise((r) => setImmediate(r));
    return engine.isQuiet;
  }
}
