// How every ctx call enters its run: refused where no call may be made, its seq taken and checked
// against the history, its recorded result replayed in order, and its cancel policy
// (docs/cancellation.md). The calls themselves are the other files of this folder.
import {
  InvalidArgumentError,
  NonDeterminismError,
  OperationInTransactionError,
  OutsideWorkflowError,
  recordedError,
  StepFailedError,
} from '../../../common/errors.js';
import type { OperationKind } from '../../../common/operation-kinds.js';
import type { OperationRecord } from '../../../common/types.js';
import { nonCancellableStorage, stepBodyStorage } from '../../als.js';
import { Execution, NEVER } from '../execution.js';

/** The entry of the ctx calls of one run. */
export class CallGate {
  constructor(readonly exec: Execution) {}

  /** Throws where `ctx.<method>` may not be called: after the run, in a validator, in a transactional body. */
  active(method: string): void {
    if (this.exec.state === 'finished') throw new OutsideWorkflowError(method);
    if (this.exec.validating) {
      throw new InvalidArgumentError(
        `ctx.${method}`,
        'is not allowed in an update validator: it decides from the state and the arguments alone',
      );
    }
    // A transactional body's one transaction commits with its one record (docs/transactions.md).
    if (stepBodyStorage.getStore()?.manager) throw new OperationInTransactionError(method);
  }

  /** The recorded operation at `seq`, checked against what the code calls now. */
  replayed(seq: number, kind: OperationKind, name: string): OperationRecord | undefined | 'mismatch' {
    const rec = this.exec.history.get(seq);
    if (!rec) return undefined;
    if (rec.kind !== kind || rec.name !== name) {
      this.exec.host.onNonDeterminism(
        this.exec,
        new NonDeterminismError(this.exec.workflowId, seq, { kind: rec.kind, name: rec.name }, { kind, name }),
      );
      return 'mismatch';
    }
    return rec;
  }

  /** A recorded result, released by the replay driver in live order. */
  private fromHistory(seq: number, rec: OperationRecord): Promise<unknown> {
    const replay = this.exec.replay;
    if (replay && !replay.done) return replay.expect(seq).then(fromRecord);
    return Promise.resolve().then(() => fromRecord(rec));
  }

  /** Common entry: next seq, replay check. Returns the seq, a replayed promise, or NEVER. */
  begin(kind: OperationKind, name: string): { seq: number; replay?: Promise<unknown>; live: boolean } {
    this.active(kind);
    const exec = this.exec;
    const seq = exec.takeSeq();
    const rec = this.replayed(seq, kind, name);
    if (rec === 'mismatch' || exec.state !== 'active') return { seq, replay: NEVER, live: false };
    if (rec) return { seq, replay: this.fromHistory(seq, rec), live: false };
    return { seq, live: !exec.readOnly };
  }

  /**
   * A call that a cancel ends (docs/cancellation.md): outside ctx.nonCancellable it rejects with
   * WorkflowCancelledError at once when the run is cancelled already (taking no seq, on replay as
   * live), and as soon as the cancel is applied while it is pending.
   */
  guarded<T>(op: (cancellable: boolean) => Promise<T>): Promise<T> {
    const exec = this.exec;
    if (exec.shieldsUsed && nonCancellableStorage.getStore() === true) return op(false);
    if (exec.cancelled && exec.state === 'active') return Promise.reject(exec.cancelled);
    return exec.cancellable(op(true));
  }

  /** startChild and the calls on other workflows: refused once cancelled (outside ctx.nonCancellable); once begun they finish. */
  refuseIfCancelled(): void {
    const exec = this.exec;
    if (!exec.cancelled || exec.state !== 'active') return;
    if (exec.shieldsUsed && nonCancellableStorage.getStore() === true) return;
    throw exec.cancelled;
  }
}

/** What the code gets of a record: its result, or its failure thrown as StepFailedError. */
export function fromRecord(rec: OperationRecord): unknown {
  if (rec.status === 'failed') {
    throw new StepFailedError(rec.name, rec.attempts ?? 1, recordedError(rec.error as Record<string, unknown> | undefined));
  }
  return rec.result;
}
