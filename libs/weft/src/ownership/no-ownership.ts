// Ownership 'none': one engine per database. It plays none of the roles: every default holds
// (roles.ts), so every question answers yes and nothing is fenced.
import { BasePolicy, type OwnershipFigures, type OwnershipPolicy } from './policy.js';
import { NoClaims, NoFence, NoMaintenance, OPEN_GATE } from './roles.js';

export class NoOwnership extends BasePolicy implements OwnershipPolicy {
  readonly gate = OPEN_GATE;
  readonly fence = new NoFence();
  readonly claims = new NoClaims();
  readonly maintenance = new NoMaintenance();

  figures(): OwnershipFigures {
    return { halted: false, claimsHeld: 0, renewalFailures: 0, lastPassAt: undefined, intervalMs: undefined };
  }
}
