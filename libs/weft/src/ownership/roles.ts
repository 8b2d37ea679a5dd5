// The roles an ownership policy plays for the engine, each with the default of a mode that does
// not play it: a mode states only what it does (docs/ownership.md, docs/architecture.md).
import type { AdvanceCommand, AdvanceOutcome, ClaimFence } from '../storage/types.js';
import type { ClaimTerms } from '../storage/repositories/claim.repository.js';
import type { WorkflowClaimRegistry } from './claim-registry.js';
import type { ClaimRenewalScheduler, PassReport } from './renewal-scheduler.js';

/** Whether this engine may run anything at all: only the holder of the global lease ('lease'). */
export interface EngineGate {
  /** Deposed from the global lease: this engine runs nothing any more. */
  readonly isHalted: boolean;
  /** False for a 'lease' engine that does not hold the lease (yet, or any more). */
  mayRunAnything(): boolean;
}

/** The modes without a global lease: always open. */
export const OPEN_GATE: EngineGate = { isHalted: false, mayRunAnything: () => true };

/** Who may drive a workflow here, and the fence its writes carry. */
export interface RunFence {
  /** May this engine drive (replay, run, commit for) this workflow now? */
  holds(workflowId: string): boolean;
  /**
   * Before a step body starts: if the hold has lapsed by this engine's own clock, stops the run
   * ('workflow-lease') or halts the engine ('lease') and returns true.
   */
  stopIfLapsed(workflowId: string): boolean;
  /** May a query be answered from the live run here (the hold valid by this engine's clock)? */
  mayAnswer(workflowId: string): boolean;
  /** The epoch a run launched now writes under. */
  epochOf(workflowId: string): string | undefined;
  /** The command with this engine's fence; terminal and suspend commits release the claim. */
  fenceCommand(cmd: AdvanceCommand, runEpoch?: string): AdvanceCommand;
  /** The claim a write of this workflow's run carries ('workflow-lease'), at `runEpoch` when given. */
  claimFence(workflowId: string, runEpoch?: string): ClaimFence | undefined;
  /** The global lease every write of this engine carries ('lease'). */
  leaseFence(): ClaimFence | undefined;
  /** Takes note of a commit's outcome: forgets a released claim, drops (or halts) on a refused fence. */
  afterCommit(cmd: AdvanceCommand, outcome: AdvanceOutcome): void;
  /**
   * A wake (timer, message) of a parked run: true when the claim still names this engine at the
   * epoch it parked under; otherwise drops the claim and the run, with a warning. `fenceEpoch`:
   * the workflow row's, read in the statement that brought the wake; undefined: read the claim.
   */
  confirmWake(workflowId: string, parkedEpoch: string | undefined, wakeKind: string, fenceEpoch?: string | null): Promise<boolean>;
  /**
   * A workflow loaded to be driven: true when its row's fence_epoch is the epoch held here;
   * otherwise another engine took it over meanwhile and the claim is dropped, with a warning.
   */
  confirmLoaded(workflowId: string, fenceEpoch: string | null): boolean;
}

/** 'none': one engine per database, every workflow is this engine's and nothing is fenced. */
export class NoFence implements RunFence {
  holds(_workflowId: string): boolean {
    return true;
  }
  stopIfLapsed(_workflowId: string): boolean {
    return false;
  }
  mayAnswer(_workflowId: string): boolean {
    return true;
  }
  epochOf(_workflowId: string): string | undefined {
    return undefined;
  }
  fenceCommand(cmd: AdvanceCommand, _runEpoch?: string): AdvanceCommand {
    return cmd;
  }
  claimFence(_workflowId: string, _runEpoch?: string): ClaimFence | undefined {
    return undefined;
  }
  leaseFence(): ClaimFence | undefined {
    return undefined;
  }
  afterCommit(_cmd: AdvanceCommand, _outcome: AdvanceOutcome): void {}
  async confirmWake(_workflowId: string, _parkedEpoch?: string, _wakeKind?: string, _fenceEpoch?: string | null): Promise<boolean> {
    return true;
  }
  confirmLoaded(_workflowId: string, _fenceEpoch: string | null): boolean {
    return true;
  }
}

/** A share of maxConcurrentWorkflows held for a claim statement in flight (ClaimBook.reserve). */
export interface Reservation {
  readonly granted: number;
  done(): void;
}

/** Per-workflow claims: taken by starts, recovery, commands and timers; bounded by maxConcurrentWorkflows. */
export interface ClaimBook {
  /** For injection (WeftModule) and tests; null without per-workflow claims. */
  readonly registry: WorkflowClaimRegistry | null;
  /** Engine id that bounds polls and timer takes to this engine's claims; null: all of them. */
  readonly pollOwner: string | null;
  /** External commands (cancel, suspend, resume elsewhere, timeouts) rotate the claim epoch. */
  readonly rotatesOnTransition: boolean;
  /** The claim a child stored for other engines' reclaim scans gets. */
  readonly childClaim: 'free' | null;
  /** Who takes a start's claim in the start's own statement; undefined: no claims. */
  claimer(): ClaimTerms | undefined;
  /** Records the claim a start took in its statement; false: another engine holds it, do not launch. */
  adoptStartClaim(workflowId: string, epoch: string | null, sentAt: number): boolean;
  /**
   * Reserves up to `wanted` claims for a claim statement about to be sent (recovery, the reclaim
   * scan, queue admission): concurrent ones cannot together take more than maxConcurrentWorkflows.
   * `done()` once the statement's claims are recorded (or it failed).
   */
  reserve(wanted: number): Reservation;
  /**
   * Before replaying running workflows at recovery: claims the ones nobody holds (or whose holder
   * expired) in one statement; returns those this engine holds now. The others are skipped.
   */
  claimForRecovery(workflowIds: string[]): Promise<string[]>;
  /** recoverAll() is claiming: the reclaim scan leaves the takeovers to it meanwhile. */
  recovering(active: boolean): void;
  /** Before an explicit command (resume): throws WorkflowClaimUnavailableError if held elsewhere. */
  claimForCommand(workflowId: string): Promise<void>;
  /** Before firing a delayed start; false: another engine has it. */
  claimForTimer(workflowId: string): Promise<boolean>;
  release(workflowId: string): Promise<void>;
  /** A workflow this engine went to drive is not running (any more): releases its claim, unawaited. */
  releaseInBackground(workflowId: string): void;
}

/** Modes without per-workflow claims have no bound to reserve against. */
export const unbounded = (wanted: number): Reservation => ({ granted: wanted, done: () => undefined });

/** No per-workflow claims: every claim is granted at once and nothing is held. */
export class NoClaims implements ClaimBook {
  readonly registry = null;
  readonly pollOwner = null;
  readonly rotatesOnTransition = false;
  readonly childClaim = null;
  claimer(): undefined {
    return undefined;
  }
  adoptStartClaim(): boolean {
    return true;
  }
  reserve(wanted: number): Reservation {
    return unbounded(wanted);
  }
  async claimForRecovery(workflowIds: string[]): Promise<string[]> {
    return workflowIds;
  }
  recovering(): void {}
  async claimForCommand(_workflowId: string): Promise<void> {}
  async claimForTimer(): Promise<boolean> {
    return true;
  }
  async release(): Promise<void> {}
  releaseInBackground(): void {}
}

/** The policy's own work beside the engine's: its bootstrap, and the pass that renews, reclaims and polls. */
export interface Maintenance {
  /** Nothing may run before bootstrap() has passed the gates (the fencing modes). */
  readonly requiresBootstrap: boolean;
  /** The pass also polls messages; without one the engine's timer tick does. */
  readonly pollsMessages: boolean;
  /** How long a taken timer stays invisible to other engines before it may be taken again. */
  readonly timerRetryMs: number;
  /** For injection (WeftModule) and tests; null without a pass. */
  readonly scheduler: ClaimRenewalScheduler | null;
  /** Gates, then the global lease or claim backfill; before any recovery, timer poll or claim. */
  bootstrap(): Promise<void>;
  /** Starts the pass on its interval (backgroundTasks 'auto'). */
  start(): void;
  /** One pass (backgroundTasks 'manual'); null when the policy has none. */
  runPass(): Promise<PassReport | null>;
  /** Shutdown began: no reclaim scan or poll from now on; renewal goes on until dispose(). */
  stop(): Promise<void>;
  /** Scheduler first (no reclaim lands after), then every held claim or the lease is released. */
  dispose(): Promise<{ released: number; failed: number }>;
}

/** Before a timer taken by a crashed engine's poll is taken again (no claims to wait for). */
export const TIMER_RETRY_MS = 30_000;

/** 'none': no gates (it never touches the ownership marker: ownership/gates.ts) and no pass. */
export class NoMaintenance implements Maintenance {
  readonly requiresBootstrap = false;
  readonly pollsMessages = false;
  readonly timerRetryMs = TIMER_RETRY_MS;
  readonly scheduler = null;
  async bootstrap(): Promise<void> {}
  start(): void {}
  async runPass(): Promise<null> {
    return null;
  }
  async stop(): Promise<void> {}
  async dispose(): Promise<{ released: number; failed: number }> {
    return { released: 0, failed: 0 };
  }
}
