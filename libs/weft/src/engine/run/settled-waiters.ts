import type { Settled } from '../settled.js';

export interface SettledSubscription {
  wait(ms: number): Promise<Settled | null>;
  cancel(): void;
}

/** Local result() callers waiting for a workflow that runs here to end. */
export class SettledWaiters {
  private readonly waiters = new Map<string, Set<(s: Settled) => void>>();

  settle(workflowId: string, s: Settled): void {
    const waiters = this.waiters.get(workflowId);
    if (!waiters) return;
    this.waiters.delete(workflowId);
    for (const w of waiters) w(s);
  }

  /**
   * Subscribes before the caller reads storage, so a settle that lands between the read and
   * the wait is not missed. `wait(ms)` resolves with the settlement or null after `ms`.
   */
  subscribe(workflowId: string): SettledSubscription {
    let settled: Settled | null = null;
    let wake: (() => void) | undefined;
    const set = this.waiters.get(workflowId) ?? new Set();
    this.waiters.set(workflowId, set);
    const listener = (s: Settled) => {
      settled = s;
      wake?.();
    };
    set.add(listener);
    const cancel = () => {
      set.delete(listener);
      if (set.size === 0 && this.waiters.get(workflowId) === set) this.waiters.delete(workflowId);
    };
    const wait = (ms: number) =>
      new Promise<Settled | null>((resolve) => {
        if (settled) return resolve(settled);
        const t = setTimeout(() => resolve(null), ms);
        wake = () => {
          clearTimeout(t);
          resolve(settled);
        };
      });
    return { wait, cancel };
  }
}
