// engine.result(): waits for a workflow's end. A run live here announces its end here; one that
// is not (enqueued, or run by another engine) is watched through the status reads ResultPoll
// batches, with a backoff, until the caller's timeout.
import { ResultTimeoutError, WorkflowNotFoundError } from '../common/errors.js';
import { type Duration, parseDuration } from '../common/duration.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { NOT_STARTED_POLL_MS, ResultPoll } from './result-poll.js';
import { settledValue } from './results.js';
import type { Runtime } from './run/runtime.js';
import type { SettledSubscription } from './run/settled-waiters.js';
import type { Settled } from './settled.js';
import { isTerminal } from './transitions.js';
import { validateWorkflowId } from './validation.js';

export interface ResultWaitDependencies {
  store: WorkflowStore;
  runtime: Runtime;
  /** Throws EngineDisposedError once the engine is disposed. */
  assertOpen(): void;
}

export class ResultWait {
  /** result() of runs that do not end here: their status reads, batched. */
  private readonly poll: ResultPoll;

  constructor(private readonly deps: ResultWaitDependencies) {
    this.poll = new ResultPoll((ids) => deps.store.workflows.statuses(ids));
  }

  /** Waits for the workflow to end; returns its output or throws WorkflowFailedError. */
  async result<O>(workflowId: string, opts: { timeout?: Duration }): Promise<O> {
    const { store, runtime } = this.deps;
    this.deps.assertOpen();
    validateWorkflowId(workflowId);
    const timeoutMs = opts.timeout === undefined ? Infinity : parseDuration(opts.timeout, 'result timeout');
    const deadline = Date.now() + timeoutMs;
    const sub = runtime.subscribeSettled(workflowId);
    try {
      // Running here: its end is announced locally, no need to read storage first.
      if (runtime.isLive(workflowId)) {
        const s = await sub.wait(Math.min(timeoutMs, 1000));
        if (s) return settledValue<O>(workflowId, s);
      }
      for (;;) {
        this.deps.assertOpen(); // disposed while it waited
        // The row itself only once the status read shared with other waiters says it ended (or is absent).
        const row = (await this.poll.look(workflowId)).ended
          ? await store.workflows.get(workflowId).catch((err: unknown) => {
              this.deps.assertOpen(); // the read failed because dispose() closed the database
              throw err;
            })
          : undefined;
        if (row === null) throw new WorkflowNotFoundError(workflowId);
        if (row && isTerminal(row.status)) return settledValue<O>(workflowId, row);
        const s = await this.untilEnded(workflowId, sub, deadline, timeoutMs);
        if (s) return settledValue<O>(workflowId, s);
      }
    } finally {
      sub.cancel();
    }
  }

  /**
   * Until it ends here (resolves with how), or the shared status read says it ended (null: read
   * the row). A run live here announces its end here: no read while it is.
   */
  private async untilEnded(workflowId: string, sub: SettledSubscription, deadline: number, timeoutMs: number): Promise<Settled | null> {
    let pollMs = 20;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) throw new ResultTimeoutError(workflowId, timeoutMs);
      const s = await sub.wait(Math.min(pollMs, left));
      if (s) return s;
      this.deps.assertOpen();
      if (this.deps.runtime.isLive(workflowId)) {
        pollMs = 500;
        continue;
      }
      const look = await this.poll.look(workflowId);
      if (look.ended) return null;
      // Not started yet: if it is admitted here, its end is announced here.
      pollMs = look.notStarted ? NOT_STARTED_POLL_MS : Math.min(pollMs * 2, 500);
    }
  }
}
