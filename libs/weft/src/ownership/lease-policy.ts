// Ownership 'lease': one engine at a time holds a global lease and runs everything; the others
// stand by. Every command carries the lease fence; a refused fence or a lost renewal halts it.
import { WorkflowClaimUnavailableError } from '../common/errors.js';
import { WeftEngineLeaseLostWarning } from '../observability/warnings.js';
import type { AdvanceCommand, AdvanceOutcome } from '../storage/types.js';
import { FencedPolicy } from './fenced-policy.js';
import { GlobalLease } from './global-lease.js';
import { unbounded, type OwnershipFigures, type OwnershipPolicy, type PolicyDependencies, type Reservation } from './policy.js';

export class LeasePolicy extends FencedPolicy implements OwnershipPolicy {
  readonly rotatesClaims = false;
  readonly pollOwner = null;
  readonly registry = null;
  readonly childClaim = null;
  private readonly lease: GlobalLease;
  private halted = false;

  constructor(deps: PolicyDependencies) {
    super(deps);
    const { sql, schema, engineId, config } = deps;
    this.lease = new GlobalLease({ sql, schema, engineId, config, renewSql: this.renewalSql });
  }

  get isHalted(): boolean {
    return this.halted;
  }

  protected heldHere(): boolean {
    return false; // no per-workflow claims in this mode
  }

  override async bootstrap(): Promise<void> {
    await super.bootstrap();
    await this.lease.acquire();
  }

  mayRunAnything(): boolean {
    return this.holds();
  }

  holds(): boolean {
    return this.lease.held && !this.halted;
  }

  /** After a pause past the TTL or an outage longer than it, the lease is not trusted: halt. */
  mayRun(): boolean {
    if (this.lease.valid && !this.halted) return true;
    this.leaseLost();
    return false;
  }

  mayAnswer(): boolean {
    return this.holds();
  }

  epochOf(): string | undefined {
    return this.lease.fence()?.epoch;
  }

  decorate(cmd: AdvanceCommand): AdvanceCommand {
    return { ...cmd, leaseFence: this.lease.fence() ?? { engineId: this.engineId, epoch: '-1' } };
  }

  committed(cmd: AdvanceCommand, outcome: AdvanceOutcome): void {
    // A refused lease fence at the epoch this engine holds means a successor took the lease over.
    const refused = !outcome.ok && outcome.reason === 'fence' && cmd.leaseFence !== undefined;
    if (refused && cmd.leaseFence!.epoch === this.lease.fence()?.epoch) this.leaseLost();
  }

  async wakeCheck(): Promise<boolean> {
    return this.holds();
  }

  loadedUnder(): boolean {
    return true;
  }
  notRunning(): void {}

  claimer(): undefined {
    return undefined;
  }

  adoptStartClaim(): boolean {
    return true;
  }

  room(): number {
    return Infinity;
  }

  async claimForRecovery(workflowIds: string[]): Promise<string[]> {
    return this.holds() ? workflowIds : [];
  }

  reserve(wanted: number): Reservation {
    return unbounded(wanted);
  }

  recovering(): void {}

  async claimForCommand(workflowId: string): Promise<void> {
    if (!this.holds()) throw new WorkflowClaimUnavailableError(workflowId, null);
  }

  async claimForTimer(): Promise<boolean> {
    return true;
  }

  async release(): Promise<void> {}

  protected async renew(): Promise<{ renewed: number; lost: string[] }> {
    const ok = await this.lease.renew();
    if (!ok && !this.halted) this.leaseLost();
    return { renewed: ok ? 1 : 0, lost: [] };
  }

  protected async reclaim(): Promise<number> {
    return 0; // the standby engines' lease attempts are the takeover
  }

  protected async releaseHeld(): Promise<{ released: number; failed: number }> {
    return { released: (await this.lease.release()) ? 1 : 0, failed: 0 };
  }

  private leaseLost(): void {
    if (this.halted) return;
    this.halted = true;
    this.lease.lose();
    this.deps.runtime.halt();
    this.warn(new WeftEngineLeaseLostWarning(this.engineId));
  }

  figures(): OwnershipFigures {
    return { halted: this.halted, claimsHeld: this.lease.held ? 1 : 0, renewalFailures: 0, ...this.passFigures() };
  }
}
