import {
  WorkflowClaimUnavailableError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
  WorkflowVersionConflictError,
} from '../common/errors.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import { TERMINAL_STATUSES, WorkflowStatus } from '../common/types.js';
import { advanceCommand } from '../storage/advance-command.js';
import { Batcher } from '../storage/batcher.js';
import type { OwnTimerTake } from '../storage/repositories/timer.repository.js';
import type { FiringRow } from '../storage/repositories/workflow-debounce.js';
import type { TimerRow, WorkflowRow } from '../storage/types.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { Change } from './run/execution.js';
import type { WorkflowRegistry } from './registry.js';
import type { Runtime } from './run/runtime.js';
import { childNotice, Settled } from './settled.js';
import type { WeftLogger } from '../common/types.js';
import { validateWorkflowId } from './validation.js';
import { cancelledRecord } from './error-record.js';
import type { CallerTransaction } from './caller-transaction.js';

const TIMER_BATCH = 200;
/** Reads of an external transition whose status changed before it could commit. */
const EXTERNAL_ATTEMPTS = 20;

/**
 * A taken timer fires again after this if its wake never committed (the engine died). With
 * ownership, nobody else may fire it before the dead holder's claim moves (TTL + grace + one
 * scan), so it comes back right then instead of 30 s later.
 */
export const isTerminal = (s: WorkflowStatus) => TERMINAL_STATUSES.includes(s);

/** Running ids read per page at recovery. */
const RECOVERY_PAGE = 1000;
/** Ids claimed per statement at recovery, then loaded and replayed together. */
const RECOVERY_SLICE = 200;

/**
 * Transitions committed from outside a workflow's own run (cancel, suspend, resume, timeout,
 * delayed start) and the due-timer pass that triggers some of them.
 */
export class Transitions {
  private readonly store: WorkflowStore;
  private readonly runtime: Runtime;
  private readonly registry: WorkflowRegistry;
  private readonly ownership: OwnershipPolicy;
  private readonly logger: WeftLogger;
  private readonly enqueued: (queue: string) => void;
  /**
   * Wait timers this engine took and woke a run with, by row id, for a retry delay: the wake's
   * commit may still be lost to a shutdown (putBackTaken).
   */
  private readonly taken = new Map<string, { timer: TimerRow; at: number }>();
  /** Local timers due together are taken in one statement (fireOwn). */
  private readonly ownTimers: Batcher<{ workflowId: string; seq: number }, OwnTimerTake>;

  constructor(deps: {
    store: WorkflowStore;
    runtime: Runtime;
    registry: WorkflowRegistry;
    ownership: OwnershipPolicy;
    logger: WeftLogger;
    /** A delayed start into `queue` was enqueued: worth an admission pass. */
    enqueued: (queue: string) => void;
  }) {
    ({ store: this.store, runtime: this.runtime, registry: this.registry, ownership: this.ownership, logger: this.logger } = deps);
    this.enqueued = deps.enqueued;
    this.ownTimers = new Batcher(
      (wanted) => this.store.timers.takeOwn(wanted, this.ownership.maintenance.timerRetryMs, this.ownership.claims.pollOwner),
      (w) => `${w.workflowId}\u0000${w.seq}`,
      { maxBatch: TIMER_BATCH },
    );
  }

  /**
   * engine.cancel (docs/cancellation.md): a running workflow is asked, in one statement that also
   * writes its grace-period timer, and its code gets WorkflowCancelledError at its current wait;
   * a second request adds nothing. One whose code does not run (pending, enqueued, suspended) is
   * ended at once. `tx`: in the caller's transaction.
   */
  async cancel(workflowId: string, reason: string, tx?: CallerTransaction): Promise<unknown> {
    validateWorkflowId(workflowId);
    const graceMs = this.runtime.options.cancelGraceMs;
    for (let attempt = 0; attempt < EXTERNAL_ATTEMPTS; attempt++) {
      const asked = await this.store.messages.requestCancel(workflowId, reason, graceMs, this.store.clockOffset(), tx?.via);
      if (!asked) throw new WorkflowNotFoundError(workflowId);
      if (asked.status === WorkflowStatus.Running) return;
      if (isTerminal(asked.status)) throw new WorkflowNotRunningError(workflowId, asked.status);
      // Ended at once unless it became running meanwhile (a delayed start fired): then it is asked.
      const ended = await this.terminate(workflowId, reason, tx, (s) => s === WorkflowStatus.Running);
      if (ended !== 'running') return ended;
    }
    throw new WorkflowVersionConflictError(workflowId, -1);
  }

  /**
   * Ends a workflow as cancelled at once, without running its code (the parent-close policy, a
   * cancel of a workflow whose code does not run, a grace period that ran out). `unless`: a
   * status it leaves alone ('running' comes back then).
   */
  terminate(
    workflowId: string,
    reason: string,
    tx?: CallerTransaction,
    unless?: (s: WorkflowStatus) => boolean,
  ): Promise<WorkflowRow | null | 'running'> {
    let skipped = false;
    return this.external(
      workflowId,
      'cancel',
      (row) => {
        if (isTerminal(row.status)) throw new WorkflowNotRunningError(workflowId, row.status);
        if (unless?.(row.status)) {
          skipped = true;
          return null;
        }
        return {
          status: WorkflowStatus.Cancelled,
          error: { value: cancelledRecord(reason) },
          completed: true,
          clearTimers: true,
          rotate: this.rotates,
        };
      },
      tx,
    ).then((row) => (skipped ? 'running' : row));
  }

  suspend(workflowId: string, reason: string): Promise<unknown> {
    return this.external(workflowId, 'suspend', (row) => {
      if (row.status !== WorkflowStatus.Running) throw new WorkflowNotRunningError(workflowId, row.status);
      return { status: WorkflowStatus.Suspended, error: { value: { name: 'WorkflowSuspended', message: reason } }, rotate: this.rotates };
    });
  }

  /** Resume of a suspended run: the claim is acquired first; losing it is a typed error. */
  async resume(workflowId: string): Promise<void> {
    validateWorkflowId(workflowId);
    const row = await this.store.workflows.get(workflowId);
    if (!row) throw new WorkflowNotFoundError(workflowId);
    if (row.status !== WorkflowStatus.Suspended) throw new WorkflowNotRunningError(workflowId, row.status, WorkflowStatus.Suspended);
    // Not a type this engine runs: make it running with a free claim, for an engine that does.
    if (!this.registry.has(row.type)) return void (await this.resumeElsewhere(workflowId));
    await this.ownership.claims.claimForCommand(workflowId); // WorkflowClaimUnavailableError if held elsewhere
    const done = await this.external(workflowId, 'resume', (r) => {
      if (r.status !== WorkflowStatus.Suspended) throw new WorkflowNotRunningError(workflowId, r.status, WorkflowStatus.Suspended);
      return { status: WorkflowStatus.Running, error: { value: null } };
    }).catch(async (err) => {
      await this.ownership.claims.release(workflowId);
      throw err;
    });
    if (done) await this.runtime.drive(workflowId);
  }

  private resumeElsewhere(workflowId: string): Promise<unknown> {
    return this.external(workflowId, 'resume', (r) => {
      if (r.status !== WorkflowStatus.Suspended) throw new WorkflowNotRunningError(workflowId, r.status, WorkflowStatus.Suspended);
      return { status: WorkflowStatus.Running, error: { value: null }, rotate: this.rotates };
    });
  }

  private get rotates(): boolean {
    return this.ownership.claims.rotatesOnTransition;
  }

  /**
   * Parent-close policy 'terminate': a workflow's live children (those `among`, if given) are
   * cancelled when it ends. Resolves once it has read which are live (the cancels go on after it,
   * and it never rejects): a continued run's child starts wait for it, so a child id the run reuses
   * is not read as the ended run's.
   */
  closeChildren(parentId: string, among?: string[]): Promise<void> {
    const live = this.store.workflows.liveChildren(parentId, among);
    void live
      .then((ids) => Promise.all(ids.map((id) => this.terminate(id, `Parent workflow "${parentId}" ended`).catch(() => undefined))))
      .catch((err) => this.logger.warn(`Closing children of "${parentId}" failed: ${(err as Error).message}`));
    return live.then(
      () => undefined,
      () => undefined,
    );
  }

  /**
   * Replays and continues every running workflow of a registered type not already live here: a
   * page of ids at a time, each slice claimed in one statement within maxConcurrentWorkflows
   * (the rest is left to reclaim scans, this engine's as room frees up and other engines'), and
   * the claimed ones loaded together (Runtime.drive shares its loads). A shutdown stops it.
   */
  async recoverAll(): Promise<{ recovered: number }> {
    let after = '';
    let recovered = 0;
    this.ownership.claims.recovering(true);
    try {
      for (;;) {
        // Only the types this engine runs: an engine with none (the CLI's) reads nothing.
        const page = await this.store.workflows.runningPage(after, RECOVERY_PAGE, this.registry.names());
        if (page.length === 0) break;
        after = page[page.length - 1].id;
        const mine = page.filter((w) => !this.runtime.isLive(w.id)).map((w) => w.id);
        for (let i = 0; i < mine.length;) {
          if (this.runtime.isDraining) return { recovered };
          const room = this.ownership.claims.reserve(Math.min(RECOVERY_SLICE, mine.length - i));
          if (room.granted <= 0) {
            room.done();
            return { recovered };
          }
          const slice = mine.slice(i, i + room.granted);
          i += slice.length;
          let claimed: string[];
          try {
            claimed = await this.ownership.claims.claimForRecovery(slice);
          } finally {
            room.done();
          }
          await Promise.all(claimed.map((id) => this.runtime.drive(id)));
          recovered += claimed.length;
        }
      }
      return { recovered };
    } finally {
      this.ownership.claims.recovering(false);
    }
  }

  /** Due timers: one query per batch, then each wakes its workflow. */
  async processDueTimers(): Promise<number> {
    let total = 0;
    const owner = this.ownership.claims.pollOwner;
    for (;;) {
      const due = await this.store.timers.takeDue(TIMER_BATCH, this.ownership.maintenance.timerRetryMs, owner, this.registry.names());
      total += due.length;
      await Promise.all(
        due.map((t) =>
          this.fire(t).catch((err) => this.logger.warn(`Timer ${t.kind} for "${t.workflowId}" failed: ${(err as Error).message}`)),
        ),
      );
      if (due.length < TIMER_BATCH) return total;
    }
  }

  /**
   * A timer of this engine's own run, armed in-process (local-timers.ts): taken as the poll takes
   * it, then fired the same way. Resolves with the ms it is still to wait by the database clock.
   */
  async fireOwn(workflowId: string, seq: number): Promise<number | null> {
    if (this.ownership.gate.isHalted) return null; // a deposed lease holder's timers are the new holder's
    const r = await this.ownTimers.submit({ workflowId, seq });
    if (r && 'waitMs' in r) return r.waitMs;
    if (r) await this.fire(r.taken);
    return null;
  }

  private async fire(t: TimerRow): Promise<void> {
    if (t.kind === 'sleep' || t.kind === 'message-timeout') {
      await this.runtime.drive(t.workflowId, t.seq, t.fenceEpoch);
      // Taken while this engine began to shut down: its run is stopped or never loaded, so nothing
      // here wakes it. The row goes back to its due time for the next owner, which would otherwise
      // wait out the take's retry delay (up to 30 s) first (async-updates.spec.ts, the takeover).
      if (this.runtime.closed || this.runtime.isDraining) await this.store.timers.putBack(t);
      else this.rememberTake(t);
      return;
    }
    if (t.kind === 'delayed-start') return this.fireDelayedStart(t.workflowId);
    if (t.kind === 'execution-deadline') {
      await this.external(t.workflowId, 'timeout', (row) =>
        isTerminal(row.status)
          ? null
          : {
              status: WorkflowStatus.TimedOut,
              error: { value: { name: 'WorkflowTimedOut', message: 'Execution timeout reached' } },
              completed: true,
              clearTimers: true,
              rotate: this.rotates,
            },
      );
    }
    if (t.kind === 'cancel-deadline') {
      // The cancel's grace period ran out: cancelled now, whatever its cleanup is doing.
      const reason = 'its cleanup did not end within cancelGracePeriod';
      const ended = await this.external(t.workflowId, 'cancel-deadline', (row) =>
        isTerminal(row.status)
          ? null
          : {
              status: WorkflowStatus.Cancelled,
              error: { value: cancelledRecord(reason) },
              completed: true,
              clearTimers: true,
              rotate: this.rotates,
            },
      );
      if (!ended) await this.store.timers.drop(t.id); // its run ended first and left the timer
    }
  }

  /**
   * A timer taken here may be fired late (the engine stalled between taking it and firing it,
   * and another engine fired it meanwhile): the workflow then runs already, maybe under a claim
   * this engine holds for its own run of it. Only a claim this fire took is let go, and only
   * while no run here uses it; a running workflow whose claim the fire took over is driven.
   */
  private async fireDelayedStart(workflowId: string): Promise<void> {
    const heldBefore = this.ownership.fence.holds(workflowId);
    if (!(await this.ownership.claims.claimForTimer(workflowId))) return; // another engine has it
    // A wake meanwhile waits for the fire (Runtime.firing).
    const status = await this.runtime.firing(workflowId, () => this.fireClaimed(workflowId, heldBefore));
    if (status === WorkflowStatus.Running && !heldBefore) await this.runtime.drive(workflowId); // its holder expired: ours to run now
  }

  /** The fire of a delayed start whose claim this engine holds; the status it found when it did not start it. */
  private async fireClaimed(workflowId: string, heldBefore: boolean): Promise<WorkflowStatus | undefined> {
    const letGo = async () => {
      if (!heldBefore && !this.runtime.isLive(workflowId)) await this.ownership.claims.release(workflowId);
    };
    let status: WorkflowStatus | undefined;
    let read = { debounced: false, due: true };
    let promoted = false; // it took a singleton key: its end wakes the next waiter
    // A debounced start (docs/decisions/0034) commits at the version it read, and only once due: a
    // call that pushed its window later (a new input, a later timer) makes this fire do nothing.
    const readForFire = async (id: string) => {
      let r = await this.store.debounce.forFire(id);
      if (r?.waits && r.status === WorkflowStatus.Pending) {
        // A singleton start queued behind its key's holder: it starts once it holds the key.
        if (!(await this.store.singletonWaits.promote(id))) {
          await this.store.singletonWaits.recheck(id);
          read = { debounced: false, due: false };
          return { ...r, byVersion: false };
        }
        promoted = true;
        r = await this.store.debounce.forFire(id);
      }
      if (r) read = { debounced: r.debounced, due: !r.debounced || r.due };
      return r && { ...r, byVersion: r.debounced };
    };
    // A failed fire lets its claim go: the timer fires again (here or elsewhere) and claims anew,
    // and if another engine started the workflow meanwhile nothing would ever release it here.
    const decide = (r: WorkflowRow) => {
      status = r.status;
      if (r.status !== WorkflowStatus.Pending || !read.due) return null;
      // A start into a queue goes to its queue now: the admission makes it running.
      const next = r.queue === null ? WorkflowStatus.Running : WorkflowStatus.Enqueued;
      return { status: next, deleteTimers: [{ kind: 'delayed-start' as const, seq: -1 }] };
    };
    const row = await this.external<FiringRow>(workflowId, 'delayed-start', decide, undefined, readForFire).catch(async (err: unknown) => {
      await letGo().catch(() => undefined);
      throw err;
    });
    if (row?.queue) {
      await letGo(); // the admission claims it, here or on another engine
      this.enqueued(row.queue);
    } else if (row) {
      // From the row the fire read: what its start stored for the run (docs/decisions/0046).
      const { input, runNumber, version, parentId, attributes, headers, traceContext, inbox } = row;
      this.runtime.launchNew(
        {
          workflowId,
          definition: this.registry.get(row.type),
          input,
          runNumber,
          version,
          parentId,
          singleton: promoted,
          attributes,
          headers,
          traceContext, // its span links to its starter's, as a loaded run's does
        },
        inbox,
      );
      return undefined;
    } else if (status !== WorkflowStatus.Running) await letGo();
    return status;
  }

  private rememberTake(t: TimerRow): void {
    const now = Date.now();
    const keep = this.ownership.maintenance.timerRetryMs;
    for (const [id, e] of this.taken) if (now - e.at > keep || this.taken.size > 10_000) this.taken.delete(id);
    this.taken.set(t.id, { timer: t, at: now });
  }

  /**
   * At shutdown, once the runs are stopped and before the claims go: the timers this engine took
   * lately go back to their due time. A wake delivered here whose commit did not land (dropped by
   * the shutdown) would otherwise leave its row a retry delay (up to 30 s) ahead, and the next owner
   * would sleep that much longer; one whose commit landed deleted its row, so nothing changes.
   */
  async putBackTaken(): Promise<void> {
    const all = [...this.taken.values()].map((e) => e.timer);
    this.taken.clear();
    for (const t of all) await this.store.timers.putBack(t);
  }

  /**
   * Read, decide, commit. The commit is judged on the status `decide` saw, not on the version it
   * read (AdvanceCommand.ifStatus), so a run that keeps committing cannot make it lose: a cancel
   * or suspend wins, whoever owns the workflow. It is tried again only when the status itself
   * changed meanwhile (decide then sees the new one). Returns the row as committed, or null when
   * `decide` chose to do nothing.
   */
  async external<R extends WorkflowRow = WorkflowRow>(
    workflowId: string,
    what: string,
    decide: (row: R) => Change | null,
    tx?: CallerTransaction,
    /** Another read of the row; `byVersion`: commit only at the version read (a debounced start's fire). */
    read?: (id: string) => Promise<(R & { byVersion: boolean }) | null>,
  ): Promise<R | null> {
    validateWorkflowId(workflowId);
    let row: (R & { byVersion?: boolean }) | null = null;
    for (let attempt = 0; attempt < EXTERNAL_ATTEMPTS; attempt++) {
      row = await (read ?? (this.reader(tx) as (id: string) => Promise<R | null>))(workflowId);
      if (!row) throw new WorkflowNotFoundError(workflowId);
      const change = decide(row);
      if (!change) return null;
      const ends = change.status !== undefined && isTerminal(change.status);
      const settled = { status: change.status ?? row.status, output: null, error: change.error?.value ?? null };
      if (ends && row.parentId) change.messages = [childNotice(row.parentId, workflowId, settled)];
      const command = advanceCommand(workflowId, row.version, { ...change, ...judgedOn(row) });
      const outcome = await (tx ? this.runtime.commitCommandOn(tx.via, command, tx.onCommit) : this.runtime.commitCommand(command));
      if (!outcome.ok) {
        if (outcome.reason === 'fence') throw new WorkflowClaimUnavailableError(workflowId, null);
        continue;
      }
      const committed = row;
      const effects = () => {
        if (change.status && change.status !== WorkflowStatus.Running) this.runtime.stopLive(workflowId);
        if (ends) this.ended(committed, settled);
      };
      if (tx) tx.onCommit(effects);
      else effects();
      return { ...row, status: settled.status, version: outcome.version };
    }
    // Only a status that changed on every attempt gets here (e.g. suspended and resumed in a loop).
    this.logger.warn(`The ${what} of workflow "${workflowId}" was not applied: its status kept changing.`);
    throw new WorkflowVersionConflictError(workflowId, row!.version);
  }

  private reader(tx?: CallerTransaction): (id: string) => Promise<WorkflowRow | null> {
    return tx ? (id) => this.store.workflows.getOn(tx.via, id) : (id) => this.store.workflows.get(id);
  }

  private ended(row: WorkflowRow, settled: Settled): void {
    this.runtime.options.metrics.workflowFinished?.(row.type, settled.status);
    this.runtime.settle(row.id, settled);
    this.runtime.terminated(row.id);
  }
}

/** An external commit is judged on the status it read, or (`byVersion`) on the version. */
function judgedOn(row: WorkflowRow & { byVersion?: boolean }): { ifStatus?: WorkflowStatus } {
  return row.byVersion ? {} : { ifStatus: row.status };
}
