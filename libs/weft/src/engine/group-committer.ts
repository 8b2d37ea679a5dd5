import type { WorkflowStore } from '../storage/workflow-store';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types';

interface Pending {
  command: AdvanceCommand;
  resolve(outcome: AdvanceOutcome): void;
  reject(err: unknown): void;
}

/**
 * Group commit: advances requested while a statement is in flight wait and then go together
 * in one statement, each keeping its own version check. Alone, a commit goes at once, so
 * latency at low load is one round trip. See docs/decisions/0001-group-commit.md.
 */
export class GroupCommitter {
  private queue: Pending[] = [];
  private inFlight = 0;
  private idleWaiters: Array<() => void> = [];
  /** Statements sent, for benchmarks and metrics. */
  statements = 0;

  constructor(
    private readonly store: WorkflowStore,
    private readonly maxBatch = 256,
    private readonly maxInFlight = 2,
  ) {}

  submit(command: AdvanceCommand): Promise<AdvanceOutcome> {
    return new Promise((resolve, reject) => {
      this.queue.push({ command, resolve, reject });
      this.pump();
    });
  }

  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void> {
    if (this.inFlight === 0 && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.takeBatch();
      this.inFlight++;
      this.send(batch).finally(() => {
        this.inFlight--;
        this.pump();
        if (this.inFlight === 0 && this.queue.length === 0) this.idleWaiters.splice(0).forEach((w) => w());
      });
    }
  }

  /** Next batch in arrival order, never two commands for one workflow (their CAS would be ambiguous). */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    const ids = new Set<string>();
    const rest: Pending[] = [];
    for (const p of this.queue) {
      if (batch.length < this.maxBatch && !ids.has(p.command.workflowId)) {
        ids.add(p.command.workflowId);
        batch.push(p);
      } else rest.push(p);
    }
    this.queue = rest;
    return batch;
  }

  private async send(batch: Pending[]): Promise<void> {
    try {
      this.statements++;
      const outcomes = await this.store.advanceMany(batch.map((p) => p.command));
      outcomes.forEach((o, i) => batch[i].resolve(o));
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      // One bad command must not fail its neighbours: isolate by sending each alone.
      await Promise.all(
        batch.map(async (p) => {
          try {
            this.statements++;
            const [o] = await this.store.advanceMany([p.command]);
            p.resolve(o);
          } catch (e) {
            p.reject(e);
          }
        }),
      );
    }
  }
}
