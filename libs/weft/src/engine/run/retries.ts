import type { WeftLogger } from '../../common/types.js';

/** Work tried again later (a redrive, a wake check): cancelled together when the engine closes. */
export class Retries {
  private readonly pending = new Set<NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly logger: WeftLogger) {}

  later(fn: () => Promise<unknown>, ms: number): void {
    if (this.closed) return;
    const t = setTimeout(() => {
      this.pending.delete(t);
      fn().catch((err) => this.logger.warn(`Retry failed: ${(err as Error).message}`));
    }, ms);
    this.pending.add(t);
  }

  close(): void {
    this.closed = true;
    for (const t of this.pending) clearTimeout(t);
    this.pending.clear();
  }
}
