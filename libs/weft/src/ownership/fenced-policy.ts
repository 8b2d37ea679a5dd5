// What the two fencing modes share, their Maintenance role: the construction gates, renewal on a
// connection of its own, and the maintenance scheduler (renew, reclaim, poll) on every engine.
import { emitWeftWarning } from '../observability/warnings.js';
import { DedicatedConnection } from '../storage/dedicated-connection.js';
import { runOwnershipGates } from './gates.js';
import { BasePolicy, OwnershipFigures, PolicyDependencies } from './policy.js';
import type { Maintenance } from './roles.js';
import { ClaimRenewalScheduler, PassReport } from './renewal-scheduler.js';

/** Before a timer taken by an engine that then died is taken again, at most. */
const TIMER_RETRY_CAP_MS = 30_000;

export abstract class FencedPolicy extends BasePolicy implements Maintenance {
  readonly maintenance: Maintenance = this;
  readonly pollsMessages = true;
  readonly requiresBootstrap = true;
  readonly scheduler: ClaimRenewalScheduler;
  /** Renewal's own connection (outside the pool): a saturated pool cannot delay a renewal. */
  readonly renewalSql: DedicatedConnection;

  constructor(deps: PolicyDependencies) {
    super(deps);
    this.renewalSql = new DedicatedConnection(() => deps.sql.connectionConfig(), deps.config.ttlMs, deps.sql.plans);
    this.scheduler = new ClaimRenewalScheduler(
      { renew: () => this.renew(), reclaim: () => this.reclaim(), poll: () => deps.runtime.poll() },
      deps.config.renewMs,
      deps.logger,
    );
  }

  get timerRetryMs(): number {
    const c = this.deps.config;
    return Math.min(TIMER_RETRY_CAP_MS, c.ttlMs + c.graceMs + c.renewMs);
  }

  protected abstract renew(): Promise<{ renewed: number; lost: string[] }>;
  protected abstract reclaim(): Promise<number>;
  protected abstract releaseHeld(): Promise<{ released: number; failed: number }>;

  async bootstrap(): Promise<void> {
    await runOwnershipGates(this.deps.sql, this.deps.schema, this.deps.config.mode);
  }

  start(): void {
    this.scheduler.start();
  }

  runPass(): Promise<PassReport> {
    return this.scheduler.runPass();
  }

  async stop(): Promise<void> {
    await this.scheduler.stopMaintenance();
  }

  async dispose(): Promise<{ released: number; failed: number }> {
    await this.scheduler.stop();
    await this.renewalSql.close();
    return this.releaseHeld();
  }

  protected warn(warning: Error): void {
    emitWeftWarning(warning, (m) => this.deps.logger.warn(m), this.deps.onWarning);
  }

  protected passFigures(): Pick<OwnershipFigures, 'lastPassAt' | 'intervalMs'> {
    return { lastPassAt: this.scheduler.lastPassAt, intervalMs: this.scheduler.intervalMs };
  }
}
