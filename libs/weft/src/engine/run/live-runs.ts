import type { Execution } from './execution.js';

/**
 * The runs live in this engine, by workflow id, and which of them are parked, least recently
 * parked first: past `maxParked` the oldest is evicted (it stays in storage and is loaded again
 * when a timer or message wakes it). A registry only: it launches, commits and ends nothing.
 */
export class LiveRuns {
  private readonly runs = new Map<string, Execution>();
  private readonly parkedLru = new Map<string, Execution>();

  constructor(
    private readonly maxParked: number,
    private readonly parkedCount: (n: number) => void,
  ) {}

  get(workflowId: string): Execution | undefined {
    return this.runs.get(workflowId);
  }

  has(workflowId: string): boolean {
    return this.runs.has(workflowId);
  }

  /** Is this run the live one of its workflow (not one continued, replaced or dropped)? */
  isCurrent(exec: Execution): boolean {
    return this.runs.get(exec.workflowId) === exec;
  }

  get size(): number {
    return this.runs.size;
  }

  add(exec: Execution): void {
    this.runs.set(exec.workflowId, exec);
  }

  /** A step body runs or a commit is under way somewhere (graceful shutdown waits for them). */
  anyBusy(): boolean {
    for (const e of this.runs.values()) if (e.inflightSteps > 0 || e.hasPendingCommits) return true;
    return false;
  }

  /**
   * Every live run waits: parked, or only waiting out steps' retry backoff, with nothing to
   * commit. The testing kit's clock skips time only then (testing/).
   */
  allWaiting(): boolean {
    for (const e of this.runs.values()) {
      if (e.hasPendingCommits || e.busySteps > 0) return false;
      // A run woken while its queue slot is released waits for a slot (queues/slots.ts), as a parked one waits.
      if (e.state === 'active' && !e.parked && e.inflightSteps === 0 && e.slot !== 'wanted') return false;
    }
    return true;
  }

  /** The run parked: it becomes the newest parked one; the oldest past the cap are evicted. */
  parked(exec: Execution): void {
    this.parkedLru.delete(exec.workflowId);
    this.parkedLru.set(exec.workflowId, exec);
    while (this.parkedLru.size > this.maxParked) {
      const [oldest] = this.parkedLru.values();
      this.parkedLru.delete(oldest.workflowId);
      if (!oldest.parked) continue;
      oldest.stop(false);
      this.runs.delete(oldest.workflowId);
    }
    this.parkedCount(this.parkedLru.size);
  }

  /** Removes a run from memory (it stays in storage). */
  forget(exec: Execution): void {
    if (this.runs.get(exec.workflowId) === exec) this.runs.delete(exec.workflowId);
    if (this.parkedLru.delete(exec.workflowId)) this.parkedCount(this.parkedLru.size);
  }

  /** Stops and forgets the live run of a workflow, if there is one. */
  stop(workflowId: string): void {
    const exec = this.runs.get(workflowId);
    if (!exec) return;
    exec.stop(true);
    this.forget(exec);
  }

  /** Stops and forgets every live run. */
  stopAll(): void {
    for (const exec of [...this.runs.values()]) {
      exec.stop(true);
      this.forget(exec);
    }
  }
}
