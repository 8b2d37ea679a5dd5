import type { WeftLogger } from '../engine/types';

export interface PassReport {
  renewed: number;
  lost: string[];
  reclaimed: number;
  polled: number;
  durationMs: number;
}

export interface SchedulerTasks {
  /** Renews everything held; returns how many were renewed and the ids lost. */
  renew(): Promise<{ renewed: number; lost: string[] }>;
  /** Takes over orphaned workflows; returns how many. */
  reclaim(): Promise<number>;
  /** Owner-side polls for buffered messages; returns how many workflows were woken. */
  poll(): Promise<number>;
}

/**
 * ClaimRenewalScheduler: on the renew interval (jittered), one single-flight pass of renewal,
 * reclaim scan and owner-side polls, independent of the timer loop. Passes never pile up: a
 * pass that overruns the interval delays the next one.
 */
export class ClaimRenewalScheduler {
  private handle: NodeJS.Timeout | undefined;
  private inFlight: Promise<PassReport> | undefined;
  private disposing = false;
  lastPassAt: Date | null = null;
  lastReport: PassReport | null = null;

  constructor(
    private readonly tasks: SchedulerTasks,
    readonly intervalMs: number,
    private readonly logger: WeftLogger,
  ) {}

  get isDisposing(): boolean {
    return this.disposing;
  }

  start(): void {
    if (this.disposing || this.handle) return;
    this.schedule(0);
  }

  /** One pass now; joins the pass in flight if there is one. */
  runPass(): Promise<PassReport> {
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.pass().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  /** Stops scheduling first (no reclaim can start after this), then waits for the pass in flight. */
  async stop(): Promise<void> {
    this.disposing = true;
    if (this.handle) clearTimeout(this.handle);
    this.handle = undefined;
    await this.inFlight?.catch(() => undefined);
  }

  private async pass(): Promise<PassReport> {
    const t0 = performance.now();
    this.lastPassAt = new Date();
    const report: PassReport = { renewed: 0, lost: [], reclaimed: 0, polled: 0, durationMs: 0 };
    try {
      const r = await this.tasks.renew();
      report.renewed = r.renewed;
      report.lost = r.lost;
    } catch (err) {
      this.logger.warn(`Claim renewal failed: ${(err as Error).message}`);
    }
    if (!this.disposing) {
      try {
        report.reclaimed = await this.tasks.reclaim();
      } catch (err) {
        this.logger.warn(`Reclaim scan failed: ${(err as Error).message}`);
      }
    }
    if (!this.disposing) {
      try {
        report.polled = await this.tasks.poll();
      } catch (err) {
        this.logger.warn(`Owner-side poll failed: ${(err as Error).message}`);
      }
    }
    report.durationMs = performance.now() - t0;
    this.lastReport = report;
    return report;
  }

  private schedule(delayMs: number): void {
    this.handle = setTimeout(() => {
      this.handle = undefined;
      void this.runPass().finally(() => {
        if (this.disposing) return;
        // ±20% jitter so engines started together do not scan in lockstep.
        this.schedule(this.intervalMs * (0.8 + Math.random() * 0.4));
      });
    }, delayMs);
  }
}
