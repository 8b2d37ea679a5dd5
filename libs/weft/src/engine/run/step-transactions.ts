import type { TransactionIsolation } from '../../common/types.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { AppTransaction } from '../../storage/app-transaction.js';
import type { AdvanceCommand, AdvanceOutcome } from '../../storage/types.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import type { Execution, TransactionHost } from './execution.js';
import type { AmbientTransactions } from '../ambient/ambient-transactions.js';
import type { EntityManager } from 'typeorm';

/**
 * Transactional steps' connections and commits. A body holds its connection while it runs, so
 * at most `slots` bodies run at once: the rest of the engine (group commits, loads, timers) keeps
 * the remainder of the pool, or a body waiting for its run's commit in flight could wait for a
 * connection the other bodies hold.
 */
export class StepTransactions implements TransactionHost {
  private free: number | undefined;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly store: WorkflowStore,
    private readonly ownership: OwnershipPolicy,
    private readonly ambient: AmbientTransactions,
    private readonly slots: () => number,
  ) {}

  beginTransaction(isolation?: TransactionIsolation): Promise<AppTransaction> {
    this.free ??= Math.max(1, this.slots());
    if (this.free > 0) {
      this.free--;
      return this.begin(isolation);
    }
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(() => this.begin(isolation));
  }

  /** With a slot taken: the slot comes back once the transaction ends, whichever way (called once), or now if it cannot begin. */
  private begin(isolation?: TransactionIsolation): Promise<AppTransaction> {
    return this.store.sql.beginAppTransaction(isolation, this.released).catch((err: unknown) => {
      this.release();
      throw err;
    });
  }

  /**
   * The fence and the version are checked by the advance statement inside the transaction, right
   * before COMMIT (never held while the body ran): a deposed owner's writes roll back with it.
   * The advance (its own check, or checked) and the COMMIT go in one round trip (WorkflowRepository.advanceAndCommit).
   */
  async commitInTransaction(exec: Execution, command: AdvanceCommand, tx: AppTransaction, seq: number): Promise<AdvanceOutcome> {
    const fence = this.ownership.fence;
    const fenced = fence.fenceCommand(command, exec.epoch);
    const outcome = await this.store.workflows.advanceAndCommit(tx, fenced, seq);
    fence.afterCommit(fenced, outcome);
    return outcome;
  }

  /** The body runs with its manager as every integrated library's active transaction. */
  withinAmbient<T>(manager: EntityManager, fn: () => T): T {
    return this.ambient.join(manager, fn);
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free = (this.free ?? 0) + 1;
  }

  private readonly released = () => this.release();
}
