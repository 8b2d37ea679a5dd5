import { advanceCommand } from '../../storage/advance-command.js';
import { isTransientDatabaseError } from '../../storage/database-errors.js';
import type { AdvanceCommand, AdvanceOutcome, HandoffOutcome, HandoffRequest } from '../../storage/types.js';
import type { Queryable } from '../../storage/sql-client.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { WeftLogger } from '../../common/types.js';
import type { GroupCommitter } from '../group-committer.js';
import type { Execution } from './execution.js';
import type { LiveRuns } from './live-runs.js';
import type { Retries } from './retries.js';

/** How long a commit waits before it is sent again once shutdown began (CommitPath.hurry). */
const HURRIED_RETRY_MS = 50;
/** The first wait before a workflow whose load failed is loaded again (CommitPath.retryLoad). */
const FIRST_LOAD_RETRY_MS = 250;

export interface CommitPathDependencies {
  committer: GroupCommitter;
  /** Every fence, hold and wake check is the policy's. */
  ownership: OwnershipPolicy;
  runs: LiveRuns;
  retries: Retries;
  logger: WeftLogger;
  /** The engine is closing: a failed commit is not sent again. */
  isClosed(): boolean;
  /** Replays a workflow from storage and drives it on (Runtime.drive). */
  drive(workflowId: string): Promise<void>;
  /** One advance on another connection (a caller's transaction). */
  advanceOn(via: Queryable, command: AdvanceCommand): Promise<AdvanceOutcome>;
  /** A queued run's end hands its slot to the queue's next workflow (docs/decisions/0042); absent: never. */
  handoff?: QueueHandoff;
}

/** The queue admission's side of a hand-off (engine/queues/admission.ts). */
export interface QueueHandoff {
  /** The terms for a run of `queue` that ends now, or null when its end goes through an admission pass. */
  request(queue: string): HandoffRequest | null;
  /** The end of `fromId` committed: `h.to` was admitted in its place (launch it here), or its slot freed. */
  ended(queue: string, fromId: string, h: HandoffOutcome, sentAt: number): void;
}

const ENDS = new Set(['completed', 'failed', 'cancelled', 'timed_out']);

/**
 * The one commit path every workflow write goes through: its ownership fence, the group
 * committer, and what a commit that throws or is refused leads to (sent again, the run
 * suspended, or re-read from storage and driven on).
 */
export class CommitPath {
  private readonly errorsLogged = new WeakSet<Execution>();
  /** Backoff waits of commits to be sent again, each ended early by hurry(). */
  private readonly pauses = new Set<() => void>();
  private hurried = false;
  /** The last wait before loading a held workflow again, per workflow whose load failed. */
  private readonly loadBackoff = new Map<string, number>();

  constructor(private readonly deps: CommitPathDependencies) {}

  /** Every workflow write gets its ownership fence here. */
  async commitCommand(command: AdvanceCommand, runEpoch?: string): Promise<AdvanceOutcome> {
    const { ownership } = this.deps;
    const decorated = ownership.fence.fenceCommand(command, runEpoch);
    const outcome = await this.deps.committer.submit(decorated);
    ownership.fence.afterCommit(decorated, outcome);
    return outcome;
  }

  /**
   * A write in a caller's transaction (a transactional cancel): fenced the same way, and written on
   * that transaction's connection, where it commits or rolls back with the caller's writes.
   */
  async commitCommandOn(via: Queryable, command: AdvanceCommand, onCommit: (fn: () => void) => void): Promise<AdvanceOutcome> {
    const { ownership } = this.deps;
    const decorated = ownership.fence.fenceCommand(command);
    const outcome = await this.deps.advanceOn(via, decorated);
    // What it did to claims held here is true once the caller's transaction commits.
    if (outcome.ok) onCommit(() => ownership.fence.afterCommit(decorated, outcome));
    else ownership.fence.afterCommit(decorated, outcome);
    return outcome;
  }

  /** A run's own writes are fenced with the epoch it was launched under; a queued run's end hands its slot off. */
  commit(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome> {
    const handoff = this.handoffOf(exec, command);
    const send = handoff
      ? (c: AdvanceCommand) => this.commitHandingOff(exec, { ...c, handoff })
      : (c: AdvanceCommand) => this.commitCommand(c, exec.epoch);
    return exec.trace ? exec.trace.commit(command, send) : send(command);
  }

  private handoffOf(exec: Execution, command: AdvanceCommand): HandoffRequest | null {
    if (exec.queue === null || !command.completed || !ENDS.has(command.status ?? '') || !this.deps.handoff) return null;
    return this.deps.handoff.request(exec.queue);
  }

  private async commitHandingOff(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome> {
    const sentAt = performance.now();
    const outcome = await this.commitCommand(command, exec.epoch);
    if (outcome.ok && outcome.handoff) this.deps.handoff!.ended(exec.queue!, exec.workflowId, outcome.handoff, sentAt);
    return outcome;
  }

  /** See ExecutionHost.onCommitError. */
  onCommitError(exec: Execution, err: unknown): boolean {
    const id = exec.workflowId;
    const { runs, ownership, logger } = this.deps;
    if (isTransientDatabaseError(err)) {
      if (!this.deps.isClosed() && runs.isCurrent(exec) && ownership.fence.holds(id)) {
        if (!this.errorsLogged.has(exec)) {
          this.errorsLogged.add(exec);
          logger.warn(`Commit for workflow "${id}" failed (${(err as Error)?.message}); sending it again.`);
        }
        return true;
      }
      exec.stop();
      this.onStale(exec, 'error', err);
      return false;
    }
    // The database refuses this write for good (a bug or an unbounded value): sending it again,
    // or replaying into it, would loop. Suspend with the reason for an operator.
    exec.stop();
    runs.forget(exec);
    logger.error(`Commit for workflow "${id}" was refused by the database (${(err as Error)?.message}); suspending it.`);
    const error = { name: 'WorkflowCommitRefused', message: (err as Error)?.message ?? String(err) };
    void this.commitCommand(advanceCommand(id, exec.version, { status: 'suspended', error: { value: error } }), exec.epoch).catch((e) =>
      logger.warn(`Suspending "${id}" failed: ${(e as Error).message}`),
    );
    return false;
  }

  /**
   * The wait before a failed commit is sent again. After hurry() it is short: a graceful stop's
   * grace period is for committing finished results, and a backoff grown during an outage (up to
   * seconds) would outlast it, losing a result the next owner then computes again.
   */
  pauseBeforeRetry(ms: number): Promise<void> {
    const wait = this.hurried ? Math.min(ms, HURRIED_RETRY_MS) : ms;
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.pauses.delete(done);
        resolve();
      };
      const timer = setTimeout(done, wait);
      this.pauses.add(done);
    });
  }

  /** Shutdown began: every commit waiting to be sent again goes now, and later waits are short. */
  hurry(): void {
    this.hurried = true;
    for (const done of [...this.pauses]) done();
  }

  /** See ExecutionHost.onStale. */
  onStale(exec: Execution, reason: 'version' | 'fence' | 'error', err?: unknown): void {
    this.deps.runs.forget(exec);
    if (reason === 'error')
      this.deps.logger.warn(`Commit for workflow "${exec.workflowId}" failed (${(err as Error)?.message}); retrying from storage.`);
    if (reason === 'fence') return; // ownership moved: the new owner drives it
    // Someone else advanced it (cancel, suspend, timeout) or the database hiccuped: re-read and go on.
    this.redrive(exec.workflowId, reason === 'error' ? 500 : 10);
  }

  /**
   * Drives a workflow again (re-read from storage) after `ms`, jittered: after an outage hundreds
   * of runs would otherwise replay in the same instant and starve the event loop (and with it the
   * renewal loop). A load that fails again comes back through retryLoad.
   */
  redrive(workflowId: string, ms: number): void {
    this.deps.retries.later(() => this.deps.drive(workflowId), ms * (0.5 + Math.random()));
  }

  /**
   * Loading a held workflow failed: load it again, with a backoff that doubles per failure of
   * that workflow (up to 10 s) while the database stays away.
   */
  retryLoad(workflowId: string, err: unknown): void {
    const ms = Math.min((this.loadBackoff.get(workflowId) ?? FIRST_LOAD_RETRY_MS / 2) * 2, 10_000);
    this.loadBackoff.set(workflowId, ms);
    if (ms === FIRST_LOAD_RETRY_MS)
      this.deps.logger.warn(
        `Loading workflow "${workflowId}" failed (${(err as Error)?.message}); loading it again while this engine holds it.`,
      );
    this.redrive(workflowId, ms);
  }

  /** A load succeeded, or is no longer this engine's to retry: a next failure starts afresh. */
  endLoadRetries(workflowId: string): void {
    this.loadBackoff.delete(workflowId);
  }
}
