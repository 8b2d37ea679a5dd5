// Who waits for a workflow's event or stream entry on this engine (getEvent, readStream): woken by
// the NOTIFY the advance statement sends with the write (storage/talk-notice.ts), which reaches
// every engine's LISTEN connection, this one's included. A short fallback poll covers a
// notification lost while the connection was down.

/** One waiter's view: register before reading, so a write between the read and the wait still wakes it. */
export interface TalkWatch {
  /** Resolves when the key is notified (or was, since the last call), or after `ms`. */
  next(ms: number): Promise<void>;
  /** The event value (stored JSON text) the latest notice carried; undefined when it carried none. */
  carried(): string | undefined;
  close(): void;
}

const keyOf = (workflowId: string, key: string) => `${workflowId}\u0001${key}`;

export class TalkWaiters {
  private readonly waiting = new Map<string, Set<(value?: string) => void>>();

  watch(workflowId: string, key: string): TalkWatch {
    const k = keyOf(workflowId, key);
    let woken = false;
    let wake: (() => void) | undefined;
    // A later notice without a value (a stream's on the same key, a long value) drops an earlier one: read then.
    let value: string | undefined;
    const onNotice = (carried?: string) => {
      woken = true;
      value = carried;
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
      carried: () => value,
      close: () => {
        wake?.();
        set.delete(onNotice);
        if (set.size === 0 && this.waiting.get(k) === set) this.waiting.delete(k);
      },
    };
  }

  /** A notification for (workflow, key) arrived; `value`: the event value it carried (stored JSON text). */
  notified(workflowId: string, key: string, value?: string): void {
    const set = this.waiting.get(keyOf(workflowId, key));
    if (set) for (const f of [...set]) f(value);
  }

  /** Wakes every waiter (dispose): each re-checks and ends. */
  wakeAll(): void {
    for (const set of this.waiting.values()) for (const f of [...set]) f();
  }
}
