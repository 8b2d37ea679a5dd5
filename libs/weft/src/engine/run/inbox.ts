import type { InboxMessage } from '../../storage/types.js';

/**
 * A run's buffered messages, in the order they became visible here, and every message id it
 * took in. A message's id is drawn before its transaction commits, so a lower id can become
 * visible after a higher one: a high-water mark would skip it for good. The ids grow with the
 * messages a run receives, as its history does with those it consumes.
 */
export class Inbox {
  private buffered: InboxMessage[] = [];
  private readonly seen = new Set<string>();

  /** Not yet consumed, in arrival order. */
  get messages(): readonly InboxMessage[] {
    return this.buffered;
  }

  /** Adds messages fetched from storage, each once (by id, whatever order they come in). */
  add(messages: readonly InboxMessage[]): void {
    for (const m of messages) {
      if (this.seen.has(m.id)) continue;
      this.seen.add(m.id);
      this.buffered.push(m);
    }
  }

  /** A cancel request waits here (it is applied in a turn of its own: Execution.takeCancel). */
  get hasCancel(): boolean {
    return this.buffered.some((m) => m.kind === 'cancel');
  }

  /** Takes the first cancel request out of the buffer. */
  takeCancel(): InboxMessage | undefined {
    const i = this.buffered.findIndex((m) => m.kind === 'cancel');
    return i < 0 ? undefined : this.buffered.splice(i, 1)[0];
  }

  /** Has this run taken in the message? */
  has(messageId: string): boolean {
    return this.seen.has(messageId);
  }

  /** What a pump could not deliver stays buffered, in its order. */
  keep(kept: InboxMessage[]): void {
    this.buffered = kept;
  }

  /** The next run of a continue-as-new: what the ended run took in is not taken in again. */
  inheritSeen(ended: Inbox): void {
    for (const id of ended.seen) this.seen.add(id);
  }
}
