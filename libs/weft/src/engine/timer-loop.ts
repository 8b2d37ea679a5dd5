import { detached } from '../common/detached.js';
import type { WorkflowClock } from '../common/clock.js';
import { LongTimeout, setLongTimeout } from './long-timeout.js';

/** Nudge times kept beyond the next tick; past it the regular interval is the backstop. */
const MAX_WANTED = 1000;

/** A LongTimeout of no delay: the end of the event loop's turn. */
function setSoon(fn: () => void): LongTimeout {
  const h = setImmediate(fn);
  return { clear: () => clearImmediate(h) };
}

/**
 * Single-flight poll loop: runs `tick` every interval, sooner when nudged by a local timer,
 * never two ticks at once, and stops cleanly.
 */
export class TimerLoop {
  private handle: LongTimeout | undefined;
  /** When the scheduled tick runs (workflow time, as nudges are); Infinity: none scheduled. */
  private nextAt = Infinity;
  /**
   * Nudge times not served yet, ascending: a tick at one time reads only what is due by then, so
   * a nudge later than the scheduled tick must get a tick of its own after it.
   */
  private wanted: number[] = [];
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
    this.want(at);
    // Never later than the regular interval: a far-off timer (a long sleep) must not hold every
    // other timer back.
    if (at < this.nextAt) this.schedule(this.delayUntil(at));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.handle?.clear();
    this.handle = undefined;
    this.wanted = [];
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

  /** Keeps `at` in order (equal times once); past MAX_WANTED the latest goes. */
  private want(at: number): void {
    const w = this.wanted;
    let i = w.length;
    while (i > 0 && w[i - 1] > at) i--;
    if (w[i - 1] === at) return;
    w.splice(i, 0, at);
    if (w.length > MAX_WANTED) w.pop();
  }

  private delayUntil(at: number): number {
    return Math.min(this.intervalMs, Math.max(0, at - this.clock.now()));
  }

  private schedule(delayMs: number): void {
    this.handle?.clear();
    this.nextAt = this.clock.now() + delayMs;
    // Due now: at the end of this turn, not setTimeout's 1 ms later (a partitioned queue's freed
    // slot waits for this pass; decision 0062), and with every nudge made in the turn.
    // Armed in no caller's context (common/detached.ts): a nudge from a run's commit would otherwise
    // arm it in that run's, and each tick re-arms it from there, keeping that run for good. The
    // tick runs in the handle's context, so what it launches keeps none either.
    this.handle = detached(() => (delayMs <= 0 ? setSoon : setLongTimeout)(() => this.fire(), delayMs));
  }

  /** The scheduled tick is due. */
  private fire(): void {
    this.handle = undefined;
    this.nextAt = Infinity;
    // This tick serves every nudge due by now; a later one schedules the tick after it.
    const now = this.clock.now();
    let served = 0;
    while (served < this.wanted.length && this.wanted[served] <= now) served++;
    this.wanted.splice(0, served);
    void this.runOnce().finally(() => {
      if (this.stopped || this.handle) return;
      this.schedule(this.wanted.length ? this.delayUntil(this.wanted[0]) : this.intervalMs);
    });
  }
}
