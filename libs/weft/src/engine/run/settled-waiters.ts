import type { Settled } from '../settled.js';

export interface SettledSubscription {
  wait(ms: number): Promise<Settled | null>;
  /** Calls `listener` once when the workflow ends here (at once if it has); no timer of its own. */
  listen(listener: (s: Settled) => void): void;
  cancel(): void;
}

/**
 * One result() caller's subscription. A class, not closures: a queue's backlog can have thousands
 * of handles awaited at once, and each holds its subscription for as long as it waits.
 */
class Subscription implements SettledSubscription {
  private settled: Settled | null = null;
  private wake: ((s: Settled) => void) | undefined;
  private timer: NodeJS.Timeout | undefined;
  private listener: ((s: Settled) => void) | undefined;

  constructor(
    private readonly owner: SettledWaiters,
    readonly workflowId: string,
  ) {}

  wait(ms: number): Promise<Settled | null> {
    if (this.settled) return Promise.resolve(this.settled);
    return new Promise<Settled | null>((resolve) => {
      this.wake = resolve;
      this.timer = setTimeout(() => {
        this.wake = undefined;
        resolve(null);
      }, ms);
    });
  }

  listen(listener: (s: Settled) => void): void {
    if (this.settled) listener(this.settled);
    else this.listener = listener;
  }

  cancel(): void {
    this.owner.unsubscribe(this);
  }

  /** The workflow ended here: a wait in progress returns at once, a later one never waits. */
  settle(s: Settled): void {
    this.settled = s;
    clearTimeout(this.timer);
    const wake = this.wake;
    this.wake = undefined;
    wake?.(s);
    const listener = this.listener;
    this.listener = undefined;
    listener?.(s);
  }
}

/** Local result() callers waiting for a workflow that runs here to end. */
export class SettledWaiters {
  /** By workflow id: its one subscription, or several (most workflows have one caller). */
  private readonly waiters = new Map<string, Subscription | Subscription[]>();

  settle(workflowId: string, s: Settled): void {
    const waiters = this.waiters.get(workflowId);
    if (!waiters) return;
    this.waiters.delete(workflowId);
    if (Array.isArray(waiters)) for (const w of waiters) w.settle(s);
    else waiters.settle(s);
  }

  /**
   * Subscribes before the caller reads storage, so a settle that lands between the read and
   * the wait is not missed. `wait(ms)` resolves with the settlement or null after `ms`.
   */
  subscribe(workflowId: string): SettledSubscription {
    const sub = new Subscription(this, workflowId);
    const had = this.waiters.get(workflowId);
    if (!had) this.waiters.set(workflowId, sub);
    else if (Array.isArray(had)) had.push(sub);
    else this.waiters.set(workflowId, [had, sub]);
    return sub;
  }

  /** Drops a subscription that no longer waits (its result() returned or threw). */
  unsubscribe(sub: Subscription): void {
    const had = this.waiters.get(sub.workflowId);
    if (had === sub) this.waiters.delete(sub.workflowId);
    else if (Array.isArray(had)) {
      const i = had.indexOf(sub);
      if (i >= 0) had.splice(i, 1);
      if (had.length === 0) this.waiters.delete(sub.workflowId);
    }
  }
}
