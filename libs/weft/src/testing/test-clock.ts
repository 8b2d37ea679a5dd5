import type { ClockTimer, WorkflowClock } from '../common/clock.js';
import { setLongTimeout, type LongTimeout } from '../engine/long-timeout.js';

interface Pending {
  dueAt: number;
  order: number;
  fn: () => void;
  real?: LongTimeout;
}

/**
 * A workflow clock whose time can jump ahead (common/clock.ts): real time plus an offset that
 * only grows. Its timers (local timer arms, step retry backoff) fire when real time reaches
 * them, or at once, in due order, when a jump passes them. What is stored in the database
 * (timers, deadlines, schedules) is fired by the environment after each jump (environment.ts).
 */
export class SkippingClock implements WorkflowClock {
  private offset = 0;
  private seq = 0;
  private readonly pending = new Set<Pending>();

  now(): number {
    return Date.now() + this.offset;
  }

  offsetMs(): number {
    return this.offset;
  }

  setTimer(fn: () => void, ms: number): ClockTimer {
    const p: Pending = { dueAt: this.now() + Math.max(0, ms), order: this.seq++, fn };
    this.pending.add(p);
    this.arm(p);
    return { clear: () => this.drop(p) };
  }

  /** The earliest of its own timers (workflow time), or null. */
  nextTimerAt(): number | null {
    let next: number | null = null;
    for (const p of this.pending) if (next === null || p.dueAt < next) next = p.dueAt;
    return next;
  }

  /** Jumps to `at` (workflow time; never back) and fires its timers due by then, earliest first. */
  jumpTo(at: number): void {
    const by = at - this.now();
    if (by > 0) this.offset += by;
    const now = this.now();
    const due = [...this.pending].filter((p) => p.dueAt <= now).sort((a, b) => a.dueAt - b.dueAt || a.order - b.order);
    for (const p of due) {
      this.drop(p);
      p.fn();
    }
    // The rest wait less real time now.
    for (const p of this.pending) this.arm(p);
  }

  private arm(p: Pending): void {
    p.real?.clear();
    p.real = setLongTimeout(
      () => {
        this.drop(p);
        p.fn();
      },
      Math.max(0, p.dueAt - this.now()),
    );
  }

  private drop(p: Pending): void {
    p.real?.clear();
    this.pending.delete(p);
  }
}
