// Ownership 'lease': the global lease is the hold of every workflow and the fence of every write.
// Its gate and fence are one object, the owner of the lease's local state (halted or not).
import { WorkflowClaimUnavailableError } from '../common/errors.js';
import type { AdvanceCommand, AdvanceOutcome, ClaimFence } from '../storage/types.js';
import type { GlobalLease } from './global-lease.js';
import { NoClaims, NoFence, type EngineGate } from './roles.js';

export class LeaseFence extends NoFence implements EngineGate {
  private halted = false;

  /** `onLost`: the engine's reaction to a lost lease (stop every live run, warn); called once. */
  constructor(
    private readonly lease: GlobalLease,
    private readonly engineId: string,
    private readonly onLost: () => void,
  ) {
    super();
  }

  get isHalted(): boolean {
    return this.halted;
  }

  /**
   * Asked before anything new is started, admitted or fired here. A lease past its TTL by this
   * engine's own clock (a pause, an outage) may have a successor that has already recovered what
   * was running; what this engine started now would be unknown to it and driven by nobody. So a
   * lapsed lease halts here, as a run's next step does (stopIfLapsed), without waiting for a
   * refused write or the renewal loop to tell.
   */
  mayRunAnything(): boolean {
    return !this.stopIfLapsed() && this.holds();
  }

  override holds(): boolean {
    return this.lease.held && !this.halted;
  }

  /** After a pause past the TTL or an outage longer than it, the lease is not trusted: halt. */
  override stopIfLapsed(): boolean {
    if (this.lease.valid && !this.halted) return false;
    this.halt();
    return true;
  }

  override mayAnswer(): boolean {
    return this.holds();
  }

  override epochOf(): string | undefined {
    return this.lease.fence()?.epoch;
  }

  override fenceCommand(cmd: AdvanceCommand): AdvanceCommand {
    return { ...cmd, leaseFence: this.leaseFence() };
  }

  override leaseFence(): ClaimFence {
    return this.lease.fence() ?? { engineId: this.engineId, epoch: '-1' };
  }

  override afterCommit(cmd: AdvanceCommand, outcome: AdvanceOutcome): void {
    // A refused lease fence at the epoch this engine holds means a successor took the lease over.
    const refused = !outcome.ok && outcome.reason === 'fence' && cmd.leaseFence !== undefined;
    if (refused && cmd.leaseFence!.epoch === this.lease.fence()?.epoch) this.halt();
  }

  override async confirmWake(): Promise<boolean> {
    return this.holds();
  }

  /** The lease is lost (a refused fence, a failed renewal, a lapse): this engine runs nothing any more. */
  halt(): void {
    if (this.halted) return;
    this.halted = true;
    this.lease.lose();
    this.onLost();
  }
}

/** No per-workflow claims, but nothing is claimed for an engine that does not hold the lease. */
export class LeaseClaims extends NoClaims {
  constructor(private readonly fence: LeaseFence) {
    super();
  }

  override async claimForRecovery(workflowIds: string[]): Promise<string[]> {
    return this.fence.holds() ? workflowIds : [];
  }

  override async claimForCommand(workflowId: string): Promise<void> {
    if (!this.fence.holds()) throw new WorkflowClaimUnavailableError(workflowId, null);
  }
}
