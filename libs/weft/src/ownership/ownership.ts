import type { WeftLogger } from '../common/types.js';
import {
  emitWeftWarning,
  WeftEngineLeaseLostWarning,
  WeftWorkflowClaimLostWarning,
  WeftWorkflowWakeDiscardedWarning,
} from '../observability/warnings.js';
import { DedicatedConnection } from '../storage/dedicated-connection.js';
import type { SqlClient } from '../storage/sql-client.js';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types.js';
import { ClaimMetrics, readClaim, WorkflowClaimRegistry } from './claim-registry.js';
import { OwnershipConfig, WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS } from './config.js';
import { runOwnershipGates } from './gates.js';
import { claimSql } from '../storage/sql/claims.sql.js';
import { GlobalLease } from './global-lease.js';
import { ClaimRenewalScheduler } from './renewal-scheduler.js';

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

/** What ownership needs from the engine's runtime. */
export interface OwnedRuntime {
  /** Drops the live run of a workflow (abort its signal) without writing anything. */
  stopLive(workflowId: string): void;
  /** Replays a workflow from storage and drives it on. */
  drive(workflowId: string): Promise<void>;
  /** Stops every live run (lease lost). */
  halt(): void;
  registeredTypes(): string[];
  /** Buffered-message polls (added by the messaging layer); returns workflows woken. */
  poll(): Promise<number>;
}

const BACKFILL_EVERY_PASSES = 10;

/** Reclaim cycles one pass may run while every cycle fills up (mass failover). */
const RECLAIM_CYCLES_PER_PASS = 20;

const RELEASING = new Set(['completed', 'failed', 'cancelled', 'timed_out', 'suspended']);

/**
 * The ownership protocol (docs/ownership.md) on top of the engine: gates, fences on every command, claim bookkeeping,
 * deposition, wake checks and the renewal scheduler. Mode 'none' makes all of it a no-op.
 */
export class Ownership {
  readonly registry: WorkflowClaimRegistry | undefined;
  readonly lease: GlobalLease | undefined;
  readonly scheduler: ClaimRenewalScheduler | undefined;
  private runtime!: OwnedRuntime;
  private halted = false;
  private readonly undriven = new Set<string>();
  private passes = 0;
  /** Renewal's own connection (outside the pool): a saturated pool cannot delay a renewal. */
  readonly renewalSql: DedicatedConnection | undefined;

  constructor(
    private readonly sql: SqlClient,
    private readonly schema: string,
    readonly engineId: string,
    readonly config: OwnershipConfig,
    private readonly logger: WeftLogger,
    metrics: ClaimMetrics = {},
    private readonly onWarning?: (w: Error) => void,
  ) {
    if (config.mode === 'none') return;
    this.renewalSql = new DedicatedConnection(() => sql.connectionConfig(), config.ttlMs);
    if (config.mode === 'workflow-lease')
      this.registry = new WorkflowClaimRegistry(sql, schema, engineId, config, metrics, this.renewalSql);
    if (config.mode === 'lease') this.lease = new GlobalLease(sql, schema, engineId, config, this.renewalSql);
    this.scheduler = new ClaimRenewalScheduler(
      { renew: () => this.renew(), reclaim: () => this.reclaim(), poll: () => this.runtime.poll() },
      config.renewMs,
      logger,
    );
  }

  get mode() {
    return this.config.mode;
  }

  attach(runtime: OwnedRuntime): void {
    this.runtime = runtime;
  }

  /** Gates, then the global lease (if any); before any recovery, timer poll or claim. */
  async bootstrap(): Promise<void> {
    await runOwnershipGates(this.sql, this.schema, this.config.mode);
    if (this.lease) await this.lease.acquire();
    if (this.registry) await this.registry.backfill();
  }

  /** May this engine drive (replay, run, commit for) this workflow now? */
  holds(workflowId: string): boolean {
    if (this.registry) return this.registry.held.has(workflowId);
    if (this.lease) return this.lease.held && !this.halted;
    return true;
  }

  /**
   * Before a step body starts: the claim must be valid by this engine's own clock. After a
   * pause past the TTL, or a database outage longer than it, the run stops here instead of
   * starting a body another engine may be running too. The claim stays in the renewal set:
   * if the next renewal confirms it (same epoch, so nobody took it over) the maintenance loop
   * drives the workflow again from storage; if it reports it lost, it is forgotten. An outage
   * thus pauses this engine's workflows instead of handing all of them to others.
   */
  mayRun(workflowId: string): boolean {
    if (this.registry) {
      if (this.registry.isValid(workflowId)) return true;
      this.runtime.stopLive(workflowId);
      if (this.registry.held.has(workflowId)) this.undriven.add(workflowId);
      return false;
    }
    if (this.lease) {
      if (this.lease.valid && !this.halted) return true;
      this.leaseLost();
      return false;
    }
    return true;
  }

  /** Adds this engine's fence to a command; the owner's terminal/suspend commits release the claim. */
  decorate(cmd: AdvanceCommand, runEpoch?: string): AdvanceCommand {
    if (this.lease) return { ...cmd, leaseFence: this.lease.fence() ?? { engineId: this.engineId, epoch: '-1' } };
    if (!this.registry || cmd.rotate) return cmd;
    // A run's writes carry the epoch it was launched under, even if the claim was re-acquired since.
    const epoch = runEpoch ?? this.registry.epochOf(cmd.workflowId);
    const fence = { engineId: this.engineId, epoch: epoch ?? '-1' };
    return { ...cmd, fence, release: cmd.status !== undefined && RELEASING.has(cmd.status) };
  }

  committed(cmd: AdvanceCommand, outcome: AdvanceOutcome): void {
    if (this.lease) {
      // A refused lease fence at the epoch this engine holds means a successor took the lease over.
      const refused = !outcome.ok && outcome.reason === 'fence' && cmd.leaseFence !== undefined;
      if (refused && cmd.leaseFence!.epoch === this.lease.fence()?.epoch) this.leaseLost();
      return;
    }
    if (!this.registry) return;
    if (outcome.ok && (cmd.release || cmd.rotate)) this.registry.forget(cmd.workflowId);
    if (!outcome.ok && outcome.reason === 'fence' && cmd.fence) this.deposed(cmd.workflowId, 'fence');
  }

  /** A fence was refused or a renewal lost: drop the workflow here, warn, never reach user code. */
  deposed(workflowId: string, reason: 'renewal' | 'fence'): void {
    if (this.lease) return this.leaseLost();
    this.registry?.lose(workflowId);
    this.runtime.stopLive(workflowId);
    emitWeftWarning(new WeftWorkflowClaimLostWarning(workflowId, this.engineId, reason), (m) => this.logger.warn(m), this.onWarning);
  }

  /** Holder, epoch and expiry of one workflow's claim as the database sees it (any mode). */
  async describe(workflowId: string): Promise<ClaimDescription> {
    const c = await readClaim(this.sql, claimSql(this.schema), workflowId, this.config.graceMs);
    return {
      workflowId,
      mode: this.config.mode,
      holder: c?.engineId ?? null,
      epoch: c?.epoch ?? null,
      expiresAt: c?.expiresAt ?? null,
      claimedAt: c?.claimedAt ?? null,
      expired: c?.expired ?? false,
      heldHere: this.registry?.held.has(workflowId) ?? false,
    };
  }

  /** Claims this engine may still take under maxConcurrentWorkflows (unbounded without per-workflow claims). */
  room(): number {
    return this.registry ? this.config.maxConcurrent - this.registry.held.size : Infinity;
  }

  /** Standalone acquire before replaying a running workflow at recovery; background: skip if held. */
  async claimForRecovery(workflowId: string): Promise<boolean> {
    if (!this.registry) return this.holds(workflowId);
    if (this.registry.held.has(workflowId)) return true;
    const r = await this.registry.acquire(workflowId);
    return r.ok;
  }

  /** Wake ownership check: the claim must still name this engine at the epoch it parked under. */
  async wakeCheck(workflowId: string, parkedEpoch: string | undefined, wakeKind: string): Promise<boolean> {
    if (!this.registry) return this.holds(workflowId);
    const view = await this.registry.read(workflowId);
    if (view && view.engineId === this.engineId && view.epoch === parkedEpoch) return true;
    this.registry.lose(workflowId);
    this.runtime.stopLive(workflowId);
    emitWeftWarning(new WeftWorkflowWakeDiscardedWarning(workflowId, wakeKind), (m) => this.logger.warn(m), this.onWarning);
    return false;
  }

  private async renew(): Promise<{ renewed: number; lost: string[] }> {
    if (this.lease) {
      const ok = await this.lease.renew();
      if (!ok && !this.halted) this.leaseLost();
      return { renewed: ok ? 1 : 0, lost: [] };
    }
    if (!this.registry) return { renewed: 0, lost: [] };
    const before = this.registry.held.size;
    const lost = await this.registry.renewAll();
    for (const id of lost) {
      this.runtime.stopLive(id);
      emitWeftWarning(new WeftWorkflowClaimLostWarning(id, this.engineId, 'renewal'), (m) => this.logger.warn(m), this.onWarning);
    }
    return { renewed: before - lost.length, lost };
  }

  /**
   * Reclaim scan: cycles of at most WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS takeovers, with a short
   * jittered pause between cycles so survivors interleave and share a mass failover; bounded
   * by maxConcurrentWorkflows. Workflows whose drive failed are retried first, claim kept.
   */
  private async reclaim(): Promise<number> {
    const registry = this.registry;
    if (!registry) return 0;
    // Now and then: running workflows whose claim row never got written (a crash or a database
    // outage between a start's insert and its claim) become visible to the scan.
    if (this.passes++ % BACKFILL_EVERY_PASSES === 0) await registry.backfill();
    await this.retryUndriven();
    let total = 0;
    for (let cycle = 0; cycle < RECLAIM_CYCLES_PER_PASS && !this.scheduler?.isDisposing; cycle++) {
      const room = Math.min(WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS, this.config.maxConcurrent - registry.held.size);
      const taken = await registry.reclaim(this.runtime.registeredTypes(), room);
      for (const t of taken) {
        this.runtime.stopLive(t.workflowId); // never drive from stale local state
        this.driveReclaimed(t.workflowId);
      }
      total += taken.length;
      if (taken.length < WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS) break;
      await new Promise((r) => setTimeout(r, 5 + Math.random() * 20));
    }
    return total;
  }

  private driveReclaimed(workflowId: string): void {
    this.runtime.drive(workflowId).catch((err) => {
      this.undriven.add(workflowId);
      this.logger.warn(`Driving reclaimed "${workflowId}" failed (${(err as Error).message}); retrying next pass.`);
    });
  }

  /** Held ones whose claim is confirmed again are driven; unconfirmed ones wait for a renewal. */
  private async retryUndriven(): Promise<void> {
    const ids = [...this.undriven].filter((id) => this.registry?.held.has(id));
    this.undriven.clear();
    for (const id of ids) {
      if (this.registry?.isValid(id)) this.driveReclaimed(id);
      else this.undriven.add(id);
    }
  }

  private leaseLost(): void {
    if (this.halted) return;
    this.halted = true;
    this.lease?.lose();
    this.runtime.halt();
    emitWeftWarning(new WeftEngineLeaseLostWarning(this.engineId), (m) => this.logger.warn(m), this.onWarning);
  }

  claimFigures(): { claimsHeld: number; renewalFailures: number } {
    return { claimsHeld: this.registry?.held.size ?? (this.lease?.held ? 1 : 0), renewalFailures: this.registry?.renewalFailures ?? 0 };
  }

  get isHalted(): boolean {
    return this.halted;
  }

  /** Shutdown began: no reclaim scan or poll from now on; renewal goes on until dispose(). */
  async stopMaintenance(): Promise<void> {
    await this.scheduler?.stopMaintenance();
  }

  /** Scheduler first (no reclaim lands after), then every held claim or the lease is released. */
  async dispose(): Promise<{ released: number; failed: number }> {
    await this.scheduler?.stop();
    await this.renewalSql?.close();
    if (this.registry) return this.registry.releaseAll();
    if (this.lease) return { released: (await this.lease.release()) ? 1 : 0, failed: 0 };
    return { released: 0, failed: 0 };
  }
}
