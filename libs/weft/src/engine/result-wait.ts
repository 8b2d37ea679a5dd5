// engine.result(): waits for a workflow's end. A run live here announces its end here; one that
// is not (enqueued, or run by another engine) is watched through the status reads ResultPoll
// batches, with a backoff, until the caller's timeout.
import { ResultTimeoutError, WorkflowNotFoundError } from '../common/errors.js';
import { type Duration, parseDuration } from '../common/duration.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { type Look, type Looker, NOT_STARTED_POLL_MS, ResultPoll } from './result-poll.js';
import { settledValue } from './results.js';
import type { Runtime } from './run/runtime.js';
import type { Settled } from './settled.js';
import { isTerminal } from './transitions.js';
import { validateWorkflowId } from './validation.js';

export interface ResultWaitDependencies {
  store: WorkflowStore;
  runtime: Runtime;
  /** Throws EngineDisposedError once the engine is disposed. */
  assertOpen(): void;
}

/**
 * One result() caller between two looks: woken by its workflow's end here or by its next look,
 * whichever comes first. One per call, for all its waits: a backlog's awaited handles each hold
 * one pending promise and this, no timer (docs/decisions/0065).
 */
class Waiter implements Looker {
  private wake: ((r: Settled | Look) => void) | undefined;
  private settled: Settled | undefined;

  constructor(readonly workflowId: string) {}

  get waiting(): boolean {
    return this.wake !== undefined;
  }

  /** Its workflow's end here, or its look, whichever comes first; the end if it came before. */
  next(poll: ResultPoll, ms: number): Promise<Settled | Look> {
    if (this.settled) return Promise.resolve(this.settled);
    return new Promise((resolve) => {
      this.wake = resolve;
      poll.lookIn(this, ms);
    });
  }

  deliver(r: Settled | Look): void {
    if (!isLook(r)) this.settled = r;
    const wake = this.wake;
    this.wake = undefined;
    wake?.(r);
  }
}

const isLook = (r: Settled | Look): r is Look => 'ended' in r;

export class ResultWait {
  /** result() of runs that do not end here: their status reads, batched. */
  private readonly poll: ResultPoll;

  constructor(private readonly deps: ResultWaitDependencies) {
    this.poll = new ResultPoll(
      (ids) => deps.store.workflows.statuses(ids),
      (id) => deps.runtime.isLive(id),
    );
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
      const waiter = new Waiter(workflowId);
      sub.listen((s) => waiter.deliver(s));
      // The status read shared with other waiters first; the row itself only once it says the
      // workflow ended (or is absent). A run live here announces its end here: no read while it is.
      let look = await this.poll.look(workflowId);
      let pollMs = 20;
      for (;;) {
        this.deps.assertOpen(); // disposed while it waited
        if (look.ended) {
          const row = await store.workflows.get(workflowId).catch((err: unknown) => {
            this.deps.assertOpen(); // the read failed because dispose() closed the database
            throw err;
          });
          if (row === null) throw new WorkflowNotFoundError(workflowId);
          if (isTerminal(row.status)) return settledValue<O>(workflowId, row);
          pollMs = 20;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new ResultTimeoutError(workflowId, timeoutMs);
        const r = await waiter.next(this.poll, Math.min(pollMs, left));
        if (!isLook(r)) return settledValue<O>(workflowId, r);
        look = r;
        // Live here: its end comes here; else back off, slowly while it has not started.
        if (r.live) pollMs = 500;
        else if (!r.ended) pollMs = r.notStarted ? NOT_STARTED_POLL_MS : Math.min(pollMs * 2, 500);
      }
    } finally {
      sub.cancel();
    }
  }
}
