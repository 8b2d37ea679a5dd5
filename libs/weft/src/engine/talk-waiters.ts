import type { TalkNotice } from '../storage/talk-notice.js';

// Who waits for a workflow's event or stream entry on this engine (getEvent, readStream): woken by
// the NOTIFY the advance statement sends with the write (storage/talk-notice.ts), which reaches
// every engine's LISTEN connection, this one's included. A short fallback poll covers a
// notification lost while the connection was down.

/** One waiter's view: register before reading, so a write between the read and the wait still wakes it. */
export interface TalkWatch {
  /** Resolves when the key is notified (or was, since the last call), or after `ms`. */
  next(ms: number): Promise<void>;
  /** The latest notice (with the event value or stream entry it may carry), since the watch began. */
  carried(): TalkNotice | undefined;
  close(): void;
}

const keyOf = (workflowId: string, key: string) => `${workflowId}\u0001${key}`;

export class TalkWaiters {
  private readonly waiting = new Map<string, Set<(notice: TalkNotice) => void>>();

  watch(workflowId: string, key: string): TalkWatch {
    const k = keyOf(workflowId, key);
    let woken = false;
    let wake: (() => void) | undefined;
    // A later notice without a value (a stream's on the same key, a long value) drops an earlier one: read then.
    let latest: TalkNotice | undefined;
    const onNotice = (notice: TalkNotice) => {
      woken = true;
      latest = notice;
      wake?.();
    };
    let set = this.waiting.get(k);
    if (!set) this.waiting.set(k, (set = new Set()));
    set.add(onNotice);
    return {
      next: (ms) => {
        if (woken) {
          woken = false;
          return Promise.resolve();
        }
        return new Promise<void>((resolve) => {
          const t = setTimeout(done, ms);
          function done() {
            clearTimeout(t);
            wake = undefined;
            woken = false;
            resolve();
          }
          wake = done;
        });
      },
      carried: () => latest,
      close: () => {
        wake?.();
        set.delete(onNotice);
        if (set.size === 0 && this.waiting.get(k) === set) this.waiting.delete(k);
      },
    };
  }

  /** A notification for (workflow, key) arrived. */
  notified(notice: TalkNotice): void {
    const set = this.waiting.get(keyOf(notice.workflowId, notice.key));
    if (set) for (const f of [...set]) f(notice);
  }

  /** Wakes every waiter (dispose): each re-checks and ends. */
  wakeAll(): void {
    for (const [k, set] of this.waiting) {
      const at = k.indexOf('\u0001');
      for (const f of [...set]) f({ workflowId: k.slice(0, at), key: k.slice(at + 1) });
    }
  }
}
