// The cancel state of one run (docs/cancellation.md, decision 0038): the cancel as applied, a
// request the replay will meet, the scope that step bodies outside ctx.nonCancellable see abort,
// and the one promise every cancellable call races. Execution owns it and decides when a cancel
// applies; this keeps what follows from it.
import type { WorkflowCancelledError } from '../../common/errors.js';

export class CancelState {
  /** The cancel as applied (live, or replayed at its seq): cancellable calls reject with it. */
  private _cancelled: WorkflowCancelledError | undefined;
  /** Aborted when the cancel is applied or the run stops: the signal of the step bodies outside ctx.nonCancellable. */
  private readonly scope = new AbortController();
  /** What every cancellable call races (made on the first one). */
  private race: { promise: Promise<never>; reject: (err: Error) => void } | undefined;
  /** The history holds a cancel request the replay has not applied yet. */
  private _ahead = false;
  private scheduled = false;
  /** ctx.nonCancellable was entered in this run: only then do calls look for its scope. */
  private _shieldsUsed = false;

  /** The cancel applied to this run (live or replayed), if any. */
  get cancelled(): WorkflowCancelledError | undefined {
    return this._cancelled;
  }

  /** A cancel request is ahead in the history: see Execution.cancelAhead. */
  get ahead(): boolean {
    return this._ahead;
  }

  /** The history holds a cancel request (found when it is loaded). */
  requestAhead(): void {
    this._ahead = true;
  }

  /** The signal of step bodies outside ctx.nonCancellable. */
  get signal(): AbortSignal {
    return this.scope.signal;
  }

  get shieldsUsed(): boolean {
    return this._shieldsUsed;
  }

  /** ctx.nonCancellable was entered. */
  shieldEntered(): void {
    this._shieldsUsed = true;
  }

  /** `p`, or WorkflowCancelledError as soon as the cancel is applied, whichever comes first. */
  cancellable<T>(p: Promise<T>): Promise<T> {
    if (!this.race) {
      let reject!: (err: Error) => void;
      const promise = new Promise<never>((_, r) => (reject = r));
      promise.catch(() => undefined); // a run with no call pending at the cancel
      this.race = { promise, reject };
    }
    return Promise.race([p, this.race.promise]);
  }

  /** Runs `turn` in a turn of its own, once however often it is asked for meanwhile. */
  schedule(turn: () => void): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      turn();
    });
  }

  /** The cancel is applied: it is no longer ahead. */
  applied(err: WorkflowCancelledError): void {
    this._cancelled = err;
    this._ahead = false;
  }

  /** What the applied cancel ends: the scope's bodies see their signal abort, every cancellable call pending rejects. */
  abortScope(err: WorkflowCancelledError): void {
    this.scope.abort(err);
    if (this.race) this.race.reject(err);
    else {
      const promise = Promise.reject(err);
      promise.catch(() => undefined);
      this.race = { promise, reject: () => undefined };
    }
  }

  /** The run stopped: the scope's bodies see their signal abort with `reason`. */
  stopped(reason: unknown): void {
    if (!this.scope.signal.aborted) this.scope.abort(reason);
  }
}
