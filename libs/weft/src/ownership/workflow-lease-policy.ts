// Ownership 'workflow-lease': every running workflow is owned by one engine at a time through a
// fenced, renewable claim (docs/ownership.md). Starts claim in their own statement, commits carry
// the claim's epoch, a suspend releases it, a terminal commit ends it by clearing the fence (the
// claim row keeps its last holder: docs/decisions/0011), and other engines reclaim what expires.
// One class plays the fence, the claim book and the maintenance: all three keep the claim
// registry and the set of held workflows not driven yet.
import { WorkflowClaimUnavailableError } from '../common/errors.js';
import { WeftWorkflowClaimLostWarning, WeftWorkflowWakeDiscardedWarning } from '../observability/warnings.js';
import { advanceCommand } from '../storage/advance-command.js';
import type { AdvanceCommand, AdvanceOutcome, ClaimFence } from '../storage/types.js';
import type { ClaimTerms } from '../storage/repositories/claim.repository.js';
import { WorkflowClaimRegistry } from './claim-registry.js';
import { WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS } from './config.js';
import { FencedPolicy } from './fenced-policy.js';
import type { OwnershipFigures, OwnershipPolicy, PolicyDependencies } from './policy.js';
import { OPEN_GATE, type ClaimBook, type Reservation, type RunFence } from './roles.js';
import { WorkflowStatus } from '../common/types.js';

const BACKFILL_EVERY_PASSES = 10;

/** Reclaim cycles one pass may run while every cycle fills up (mass failover). */
const RECLAIM_CYCLES_PER_PASS = 20;

export class WorkflowLeasePolicy extends FencedPolicy implements OwnershipPolicy, RunFence, ClaimBook {
  readonly gate = OPEN_GATE;
  readonly fence: RunFence = this;
  readonly claims: ClaimBook = this;
  readonly rotatesOnTransition = true;
  readonly childClaim = 'free' as const;
  readonly registry: WorkflowClaimRegistry;
  private readonly undriven = new Set<string>();
  private passes = 0;
  /** Claims reserved for claim statements in flight (reserve()). */
  private reserved = 0;
  private recoveries = 0;

  constructor(deps: PolicyDependencies) {
    super(deps);
    const { sql, schema, engineId, config, metrics } = deps;
    this.registry = new WorkflowClaimRegistry({ sql, schema, engineId, config, metrics, renewSql: this.renewalSql });
  }

  get pollOwner(): string {
    return this.engineId;
  }

  override async bootstrap(): Promise<void> {
    await super.bootstrap();
    await this.registry.backfill();
  }

  holds(workflowId: string): boolean {
    return this.registry.held.has(workflowId);
  }

  /**
   * Before a step body starts: the claim must be valid by this engine's own clock. After a
   * pause past the TTL, or a database outage longer than it, the run stops here instead of
   * starting a body another engine may be running too. The claim stays in the renewal set:
   * if the next renewal confirms it (same epoch, so nobody took it over) the maintenance loop
   * drives the workflow again from storage; if it reports it lost, it is forgotten. An outage
   * thus pauses this engine's workflows instead of handing all of them to others.
   */
  stopIfLapsed(workflowId: string): boolean {
    if (this.registry.isValid(workflowId)) return false;
    this.deps.runtime.stopLive(workflowId);
    if (this.registry.held.has(workflowId)) this.undriven.add(workflowId);
    return true;
  }

  mayAnswer(workflowId: string): boolean {
    return this.registry.isValid(workflowId);
  }

  epochOf(workflowId: string): string | undefined {
    return this.registry.epochOf(workflowId);
  }

  fenceCommand(cmd: AdvanceCommand, runEpoch?: string): AdvanceCommand {
    if (cmd.rotate) return cmd;
    // A suspend releases the claim for whoever resumes it; a terminal commit (completed) clears the
    // fence in its UPDATE and leaves the claim row as it is (docs/decisions/0011).
    return advanceCommand(cmd.workflowId, cmd.expectedVersion, cmd, {
      fence: this.claimFence(cmd.workflowId, runEpoch),
      release: cmd.status === WorkflowStatus.Suspended,
    });
  }

  claimFence(workflowId: string, runEpoch?: string): ClaimFence {
    // A run's writes carry the epoch it was launched under, even if the claim was re-acquired since.
    return { engineId: this.engineId, epoch: runEpoch ?? this.registry.epochOf(workflowId) ?? '-1' };
  }

  leaseFence(): undefined {
    return undefined;
  }

  afterCommit(cmd: AdvanceCommand, outcome: AdvanceOutcome): void {
    if (outcome.ok && (cmd.release || cmd.rotate || cmd.completed)) this.registry.forget(cmd.workflowId);
    if (!outcome.ok && outcome.reason === 'fence' && cmd.fence) this.deposed(cmd.workflowId);
  }

  async confirmWake(workflowId: string, parkedEpoch: string | undefined, wakeKind: string, fenceEpoch?: string | null): Promise<boolean> {
    if (fenceEpoch !== undefined) {
      // The row's fence epoch is the claim's while it has a holder, and an epoch is handed to one
      // holding only (docs/decisions/0008): equal to the parked epoch means held here.
      if (parkedEpoch !== undefined && fenceEpoch === parkedEpoch) return true;
    } else {
      const view = await this.registry.read(workflowId);
      if (view && view.engineId === this.engineId && view.epoch === parkedEpoch && !view.ended) return true;
    }
    this.registry.lose(workflowId);
    this.deps.runtime.stopLive(workflowId);
    this.warn(new WeftWorkflowWakeDiscardedWarning(workflowId, wakeKind));
    return false;
  }

  confirmLoaded(workflowId: string, fenceEpoch: string | null): boolean {
    if (this.registry.epochOf(workflowId) === fenceEpoch) return true;
    this.deposed(workflowId);
    return false;
  }

  releaseInBackground(workflowId: string): void {
    void this.registry.release(workflowId).catch(() => undefined);
  }

  claimer(): ClaimTerms {
    return this.registry.terms;
  }

  adoptStartClaim(workflowId: string, epoch: string | null, sentAt: number): boolean {
    if (epoch === null) return false;
    this.registry.adopt(workflowId, epoch, sentAt);
    return true;
  }

  private room(): number {
    return this.config.maxConcurrent - this.registry.held.size - this.reserved;
  }

  reserve(wanted: number): Reservation {
    const granted = Math.max(0, Math.min(wanted, this.room()));
    this.reserved += granted;
    let open = true;
    return {
      granted,
      done: () => {
        if (open) this.reserved -= granted;
        open = false;
      },
    };
  }

  async claimForRecovery(workflowIds: string[]): Promise<string[]> {
    const held = workflowIds.filter((id) => this.registry.held.has(id));
    const taken = await this.registry.acquireMany(workflowIds.filter((id) => !this.registry.held.has(id)));
    return [...held, ...taken];
  }

  recovering(active: boolean): void {
    this.recoveries += active ? 1 : -1;
  }

  async claimForCommand(workflowId: string): Promise<void> {
    const r = await this.registry.acquire(workflowId, { explicit: true });
    if (!r.ok) throw new WorkflowClaimUnavailableError(workflowId, r.reason === 'held' ? r.heldBy : null);
  }

  async claimForTimer(workflowId: string): Promise<boolean> {
    return this.registry.held.has(workflowId) || (await this.registry.acquire(workflowId)).ok;
  }

  async release(workflowId: string): Promise<void> {
    await this.registry.release(workflowId);
  }

  /** A fence was refused: drop the workflow here, warn, never reach user code. */
  private deposed(workflowId: string): void {
    this.registry.lose(workflowId);
    this.deps.runtime.stopLive(workflowId);
    void this.warnLost([workflowId], 'fence');
  }

  protected async renew(): Promise<{ renewed: number; lost: string[] }> {
    const before = this.registry.held.size;
    const lost = await this.registry.renewAll();
    for (const id of lost) this.deps.runtime.stopLive(id);
    if (lost.length) void this.warnLost(lost, 'renewal');
    return { renewed: before - lost.length, lost };
  }

  /**
   * A claim an external transition rotated (cancel, suspend or timeout by any engine, or a
   * purge) was taken from this engine on purpose, not lost: only the others are warned about.
   * When the workflows cannot be read, every one is.
   */
  private async warnLost(workflowIds: string[], reason: 'renewal' | 'fence'): Promise<void> {
    const ended = await this.registry.endedExternally(workflowIds).catch(() => new Set<string>());
    for (const id of workflowIds) if (!ended.has(id)) this.warn(new WeftWorkflowClaimLostWarning(id, this.engineId, reason));
  }

  /**
   * Reclaim scan: cycles of at most WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS takeovers, with a short
   * jittered pause between cycles so survivors interleave and share a mass failover; bounded
   * by maxConcurrentWorkflows. Workflows whose drive failed are retried first, claim kept.
   */
  protected async reclaim(): Promise<number> {
    const registry = this.registry;
    // Now and then: running workflows whose claim row never got written (a crash or a database
    // outage between a start's insert and its claim) become visible to the scan.
    if (this.passes++ % BACKFILL_EVERY_PASSES === 0) await registry.backfill();
    await registry.retryReleases().catch(() => false);
    this.retryUndriven();
    let total = 0;
    // While recoverAll() claims (in pages, through the key), a scan of every candidate per cycle
    // would only race it for the same rows.
    if (this.recoveries > 0) return total;
    for (let cycle = 0; cycle < RECLAIM_CYCLES_PER_PASS && !this.scheduler.isDisposing; cycle++) {
      const room = this.reserve(WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS);
      let taken: Awaited<ReturnType<WorkflowClaimRegistry['reclaim']>>;
      try {
        taken = await registry.reclaim(this.deps.runtime.registeredTypes(), room.granted);
      } finally {
        room.done();
      }
      for (const t of taken) {
        this.deps.runtime.stopLive(t.workflowId); // never drive from stale local state
        this.driveReclaimed(t.workflowId);
      }
      total += taken.length;
      if (taken.length < WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS) break;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    }
    return total;
  }

  protected releaseHeld(): Promise<{ released: number; failed: number }> {
    return this.registry.releaseAll();
  }

  private driveReclaimed(workflowId: string): void {
    this.deps.runtime.drive(workflowId).catch((err) => {
      this.undriven.add(workflowId);
      this.deps.logger.warn(`Driving reclaimed "${workflowId}" failed (${(err as Error).message}); retrying next pass.`);
    });
  }

  /** Held ones whose claim is confirmed again are driven; unconfirmed ones wait for a renewal. */
  private retryUndriven(): void {
    const ids = [...this.undriven].filter((id) => this.registry.held.has(id));
    this.undriven.clear();
    for (const id of ids) {
      if (this.registry.isValid(id)) this.driveReclaimed(id);
      else this.undriven.add(id);
    }
  }

  figures(): OwnershipFigures {
    return { halted: false, claimsHeld: this.registry.held.size, renewalFailures: this.registry.renewalFailures, ...this.passFigures() };
  }
}
