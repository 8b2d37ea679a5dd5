// Ownership 'lease': one engine at a time holds a global lease and runs everything; the others
// stand by. Every command carries the lease fence (LeaseFence); a refused fence or a lost renewal
// halts it. This class is the mode's maintenance: acquiring, renewing and releasing the lease.
import { WeftEngineLeaseLostWarning } from '../observability/warnings.js';
import { FencedPolicy } from './fenced-policy.js';
import { GlobalLease } from './global-lease.js';
import { LeaseClaims, LeaseFence } from './lease-fence.js';
import type { OwnershipFigures, OwnershipPolicy, PolicyDependencies } from './policy.js';

export class LeasePolicy extends FencedPolicy implements OwnershipPolicy {
  readonly fence: LeaseFence;
  readonly gate: LeaseFence;
  readonly claims: LeaseClaims;
  private readonly lease: GlobalLease;

  constructor(deps: PolicyDependencies) {
    super(deps);
    const { sql, schema, engineId, config } = deps;
    this.lease = new GlobalLease({ sql, schema, engineId, config, renewSql: this.renewalSql });
    this.fence = new LeaseFence(this.lease, engineId, () => {
      deps.runtime.halt();
      this.warn(new WeftEngineLeaseLostWarning(engineId));
    });
    this.gate = this.fence;
    this.claims = new LeaseClaims(this.fence);
  }

  override async bootstrap(): Promise<void> {
    await super.bootstrap();
    await this.lease.acquire();
  }

  protected async renew(): Promise<{ renewed: number; lost: string[] }> {
    const ok = await this.lease.renew();
    if (!ok) this.fence.halt();
    return { renewed: ok ? 1 : 0, lost: [] };
  }

  protected async reclaim(): Promise<number> {
    return 0; // the standby engines' lease attempts are the takeover
  }

  protected async releaseHeld(): Promise<{ released: number; failed: number }> {
    return { released: (await this.lease.release()) ? 1 : 0, failed: 0 };
  }

  figures(): OwnershipFigures {
    return { halted: this.fence.isHalted, claimsHeld: this.lease.held ? 1 : 0, renewalFailures: 0, ...this.passFigures() };
  }
}
