import type { WorkflowClock } from '../common/clock.js';
import { LongTimeout, setLongTimeout } from './long-timeout.js';

/**
 * Single-flight poll loop: runs `tick` every interval, sooner when nudged by a local timer,
 * never two ticks at once, and stops cleanly.
 */
export class TimerLoop {
  private handle: LongTimeout | undefined;
  private nextAt = Infinity;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = true;

  constructor(
    private readonly tick: () => Promise<void>,
    private readonly intervalMs: number,
    private readonly onError: (err: unknown) => void,
    /** Nudges are in workflow time; the interval is real time. */
    private readonly clock: Pick<WorkflowClock, 'now'> = { now: () => Date.now() },
  ) {}

  /** Started and not stopped. */
  get isRunning(): boolean {
    return !this.stopped;
  }

  start(): void {
    this.stopped = false;
    this.schedule(0);
  }

  /** Makes sure a tick runs at or soon after `at` (epoch ms, workflow time). */
  nudgeAt(at: number): void {
    if (this.stopped) return;
    // Never later than the regular interval: a nudge during a tick replaces the interval's
    // schedule, and a far-off timer (a long sleep) must not hold every other timer back.
    if (at < this.nextAt) this.schedule(Math.min(this.intervalMs, Math.max(0, at - this.clock.now())));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.handle?.clear();
    this.handle = undefined;
    await this.running;
  }

  /** One tick now (also used by runMaintenance). */
  runOnce(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.tick();
        } while (this.again && !this.stopped);
      } catch (err) {
        this.onError(err);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private schedule(delayMs: number): void {
    this.handle?.clear();
    this.nextAt = Date.now() + delayMs;
    this.handle = setLongTimeout(() => {
      this.handle = undefined;
      this.nextAt = Infinity;
      void this.runOnce().finally(() => {
        if (!this.stopped && !this.handle) this.schedule(this.intervalMs);
      });
    }, delayMs);
  }
}
