// The ownership policy the engine is built with: one interface, one implementation per mode
// ('none', 'lease', 'workflow-lease'). The engine asks it questions and hands it every command;
// it never looks at which mode it is (docs/ownership.md, docs/architecture.md).
import type { WeftLogger } from '../common/types.js';
import type { SqlClient } from '../storage/sql-client.js';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types.js';
import { ClaimRepository, type ClaimTerms } from '../storage/repositories/claim.repository.js';
import type { ClaimMetrics, WorkflowClaimRegistry } from './claim-registry.js';
import type { OwnershipConfig, OwnershipMode } from './config.js';
import type { ClaimRenewalScheduler, PassReport } from './renewal-scheduler.js';

export interface ClaimDescription {
  workflowId: string;
  mode: string;
  holder: string | null;
  epoch: string | null;
  expiresAt: Date | null;
  claimedAt: Date | null;
  /** Expired by the database clock plus the takeover grace. */
  expired: boolean;
  heldHere: boolean;
}

/** What a policy needs from the engine's runtime; given at construction. */
export interface OwnedRuntime {
  /** Drops the live run of a workflow (abort its signal) without writing anything. */
  stopLive(workflowId: string): void;
  /** Replays a workflow from storage and drives it on. */
  drive(workflowId: string): Promise<void>;
  /** Stops every live run (lease lost). */
  halt(): void;
  registeredTypes(): string[];
  /** Buffered-message polls; returns workflows woken. */
  poll(): Promise<number>;
}

export interface PolicyDependencies {
  sql: SqlClient;
  schema: string;
  engineId: string;
  config: OwnershipConfig;
  logger: WeftLogger;
  metrics?: ClaimMetrics;
  onWarning?: (w: Error) => void;
  runtime: OwnedRuntime;
}

export interface OwnershipFigures {
  halted: boolean;
  claimsHeld: number;
  renewalFailures: number;
  /** Start of the policy's last maintenance pass; undefined when it has no pass of its own. */
  lastPassAt: Date | null | undefined;
  intervalMs: number | undefined;
}

export interface OwnershipPolicy {
  readonly mode: OwnershipMode;
  readonly engineId: string;
  readonly config: OwnershipConfig;
  /** External commands (cancel, suspend, resume elsewhere, timeouts) rotate the claim epoch. */
  readonly rotatesClaims: boolean;
  /** Engine id that bounds polls and timer takes to this engine's claims; null: all of them. */
  readonly pollOwner: string | null;
  /** How long a taken timer stays invisible to other engines before it may be taken again. */
  readonly timerRetryMs: number;
  /** Nothing may run before bootstrap() has passed the gates (the fencing modes). */
  readonly requiresBootstrap: boolean;
  /** Deposed from the global lease: this engine runs nothing any more. */
  readonly isHalted: boolean;
  /** The policy's pass also polls messages; without one the engine's timer tick does. */
  readonly pollsOnItsPass: boolean;
  /** For injection (WeftModule) and tests; null in modes without per-workflow claims. */
  readonly registry: WorkflowClaimRegistry | null;
  readonly scheduler: ClaimRenewalScheduler | null;

  /** Gates, then the global lease or claim backfill; before any recovery, timer poll or claim. */
  bootstrap(): Promise<void>;
  /** May this engine run anything now (false for a 'lease' engine that does not hold the lease)? */
  mayRunAnything(): boolean;
  startMaintenance(): void;
  /** One maintenance pass (backgroundTasks 'manual'); null when the policy has none. */
  runPass(): Promise<PassReport | null>;
  /** Shutdown began: no reclaim scan or poll from now on; renewal goes on until dispose(). */
  stopMaintenance(): Promise<void>;
  /** Scheduler first (no reclaim lands after), then every held claim or the lease is released. */
  dispose(): Promise<{ released: number; failed: number }>;

  /** May this engine drive (replay, run, commit for) this workflow now? */
  holds(workflowId: string): boolean;
  /** Before a step body starts: the hold must be valid by this engine's own clock. */
  mayRun(workflowId: string): boolean;
  /** May a query be answered from the live run here (the hold valid by this engine's clock)? */
  mayAnswer(workflowId: string): boolean;
  /** The epoch a run launched now writes under. */
  epochOf(workflowId: string): string | undefined;
  /** Adds this engine's fence to a command; terminal and suspend commits release the claim. */
  decorate(cmd: AdvanceCommand, runEpoch?: string): AdvanceCommand;
  committed(cmd: AdvanceCommand, outcome: AdvanceOutcome): void;
  /**
   * Wake ownership check: the claim must still name this engine at the epoch it parked under.
   * `fenceEpoch`: the workflow row's, read in the statement that brought the wake (no read of
   * its own then); undefined: read the claim.
   */
  wakeCheck(workflowId: string, parkedEpoch: string | undefined, wakeKind: string, fenceEpoch?: string | null): Promise<boolean>;
  /**
   * A workflow loaded to be driven: its row's fence_epoch must be the epoch held here, or another
   * engine took it over meanwhile (the claim is dropped here, with a warning); false: do not drive.
   */
  loadedUnder(workflowId: string, fenceEpoch: string | null): boolean;
  /** A workflow this engine went to drive is not running (any more): let go of its claim. */
  notRunning(workflowId: string): void;

  /** Who takes a start's claim in the start's own statement; undefined: no claims. */
  claimer(): ClaimTerms | undefined;
  /** The claim a child stored for other engines' reclaim scans gets. */
  readonly childClaim: 'free' | null;
  /** Records the claim a start took in its statement; false: another engine holds it, do not launch. */
  adoptStartClaim(workflowId: string, epoch: string | null, sentAt: number): boolean;
  /** Claims this engine may still take under maxConcurrentWorkflows (reservations counted). */
  room(): number;
  /**
   * Reserves up to `wanted` of the room for a claim statement about to be sent (recovery, the
   * reclaim scan, queue admission): concurrent ones cannot together take more than
   * maxConcurrentWorkflows. `done()` once the statement's claims are recorded (or it failed).
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
  describe(workflowId: string): Promise<ClaimDescription>;
  figures(): OwnershipFigures;
}

/** A share of maxConcurrentWorkflows held for a claim statement in flight (OwnershipPolicy.reserve). */
export interface Reservation {
  readonly granted: number;
  done(): void;
}

/** Modes without per-workflow claims have no bound to reserve against. */
export const unbounded = (wanted: number): Reservation => ({ granted: wanted, done: () => undefined });

/** What every mode shares: the claim view, which reads the same table in any mode. */
export abstract class BasePolicy {
  private readonly claims: ClaimRepository;

  constructor(protected readonly deps: PolicyDependencies) {
    this.claims = new ClaimRepository(deps.sql, deps.schema);
  }

  get engineId(): string {
    return this.deps.engineId;
  }

  get config(): OwnershipConfig {
    return this.deps.config;
  }

  get mode(): OwnershipMode {
    return this.deps.config.mode;
  }

  protected abstract heldHere(workflowId: string): boolean;

  async describe(workflowId: string): Promise<ClaimDescription> {
    const read = await this.claims.read(workflowId, this.deps.config.graceMs);
    // A claim whose run ended names its last holder but is held by nobody (docs/decisions/0011).
    const c = read?.ended ? { ...read, engineId: null, expiresAt: null, claimedAt: null, expired: false } : read;
    return {
      workflowId,
      mode: this.mode,
      holder: c?.engineId ?? null,
      epoch: c?.epoch ?? null,
      expiresAt: c?.expiresAt ?? null,
      claimedAt: c?.claimedAt ?? null,
      expired: c?.expired ?? false,
      heldHere: this.heldHere(workflowId),
    };
  }
}
