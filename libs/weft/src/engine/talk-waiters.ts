import type { NoticeEntry, TalkNotice } from '../storage/talk-notice.js';

// Who waits for a workflow's event or stream entry on this engine (getEvent, readStream): woken by
// the NOTIFY the advance statement sends with the write (storage/talk-notice.ts), which reaches
// every engine's LISTEN connection, this one's included. A short fallback poll covers a
// notification lost while the connection was down.

/** One waiter's view: register before reading, so a write between the read and the wait still wakes it. */
export interface TalkWatch {
  /** Resolves when the key is notified (or was, since the last call), or after `ms`. */
  next(ms: number): Promise<void>;
  /** The latest notice (with the event value it may carry), since the watch began. */
  carried(): TalkNotice | undefined;
  /**
   * The stream entries notices carried since the last call, in offset order (taken: the next call
   * returns only newer ones). Entries that came faster than the reader woke all stay here, so a
   * burst needs no read; past CARRIED_ENTRIES the oldest are dropped and the reader reads them.
   */
  takeEntries(): NoticeEntry[];
  close(): void;
}

/** Stream entries a watch keeps between two wakes of its reader. */
export const CARRIED_ENTRIES = 256;

const keyOf = (workflowId: string, key: string) => `${workflowId}\u0001${key}`;

export class TalkWaiters {
  private readonly waiting = new Map<string, Set<(notice: TalkNotice) => void>>();

  watch(workflowId: string, key: string): TalkWatch {
    const k = keyOf(workflowId, key);
    let woken = false;
    let wake: (() => void) | undefined;
    // A later notice without a value (a stream's on the same key, a long value) drops an earlier one: read then.
    let latest: TalkNotice | undefined;
    let entries: NoticeEntry[] = [];
    const onNotice = (notice: TalkNotice) => {
      woken = true;
      latest = notice;
      if (notice.entry) {
        entries.push(notice.entry);
        if (entries.length > CARRIED_ENTRIES) entries.shift();
      }
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
      takeEntries: () => {
        const taken = entries.sort((x, y) => x.offset - y.offset);
        entries = [];
        return taken;
      },
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
