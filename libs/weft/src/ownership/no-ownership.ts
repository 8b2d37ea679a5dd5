// Ownership 'none': one engine per database. Every question answers yes and nothing is fenced.
import type { AdvanceCommand } from '../storage/types.js';
import { BasePolicy, OwnershipFigures, OwnershipPolicy, Reservation, unbounded } from './policy.js';

/** Before a timer taken by a crashed engine's poll is taken again (no claims to wait for). */
export const TIMER_RETRY_MS = 30_000;

export class NoOwnership extends BasePolicy implements OwnershipPolicy {
  readonly rotatesClaims = false;
  readonly pollOwner = null;
  readonly timerRetryMs = TIMER_RETRY_MS;
  readonly requiresBootstrap = false;
  readonly isHalted = false;
  readonly pollsOnItsPass = false;
  readonly registry = null;
  readonly scheduler = null;
  readonly childClaim = null;

  protected heldHere(): boolean {
    return false;
  }

  /** No gates: 'none' engines never touch the ownership marker (ownership/gates.ts). */
  async bootstrap(): Promise<void> {}

  mayRunAnything(): boolean {
    return true;
  }
  startMaintenance(): void {}
  async runPass(): Promise<null> {
    return null;
  }
  async stopMaintenance(): Promise<void> {}
  async dispose(): Promise<{ released: number; failed: number }> {
    return { released: 0, failed: 0 };
  }

  holds(): boolean {
    return true;
  }
  mayRun(): boolean {
    return true;
  }
  mayAnswer(): boolean {
    return true;
  }
  epochOf(): undefined {
    return undefined;
  }
  decorate(cmd: AdvanceCommand): AdvanceCommand {
    return cmd;
  }
  committed(): void {}
  async wakeCheck(): Promise<boolean> {
    return true;
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
    return workflowIds;
  }
  reserve(wanted: number): Reservation {
    return unbounded(wanted);
  }
  recovering(): void {}
  async claimForCommand(): Promise<void> {}
  async claimForTimer(): Promise<boolean> {
    return true;
  }
  async release(): Promise<void> {}

  figures(): OwnershipFigures {
    return { halted: false, claimsHeld: 0, renewalFailures: 0, lastPassAt: undefined, intervalMs: undefined };
  }
}
