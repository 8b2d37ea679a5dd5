import type { WeftLogger } from '../common/types.js';

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

/** Delay to the next wall-clock multiple of the interval, plus a few ms of jitter. */
export function nextSlotDelay(intervalMs: number, now = Date.now()): number {
  const toSlot = intervalMs - (now % intervalMs);
  return toSlot + Math.random() * Math.min(intervalMs * 0.1, 10);
}

/** One single-flight loop: a run that overruns the interval delays the next one. */
class Loop<T> {
  private handle: NodeJS.Timeout | undefined;
  private inFlight: Promise<T> | undefined;
  private stopped = false;

  constructor(
    private readonly body: () => Promise<T>,
    private readonly nextDelayMs: () => number,
  ) {}

  start(firstDelayMs: number): void {
    if (!this.stopped && !this.handle) this.schedule(firstDelayMs);
  }

  run(): Promise<T> {
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.body().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.handle) clearTimeout(this.handle);
    this.handle = undefined;
    await this.inFlight?.catch(() => undefined);
  }

  private schedule(delayMs: number): void {
    this.handle = setTimeout(() => {
      this.handle = undefined;
      void this.run().finally(() => {
        if (!this.stopped) this.schedule(this.nextDelayMs());
      });
    }, delayMs);
  }
}

/**
 * ClaimRenewalScheduler: two single-flight loops on the renew interval, independent of the
 * timer loop. Renewal runs alone on its own loop (and, in the engine, its own connection), so
 * reclaim cycles, replays and polls can never delay it past the TTL; the maintenance loop runs
 * the reclaim scan and the owner-side polls. `runPass()` runs one of each, renewal first.
 */
export class ClaimRenewalScheduler {
  private readonly renewal: Loop<{ renewed: number; lost: string[] }>;
  private readonly maintenance: Loop<{ reclaimed: number; polled: number }>;
  private disposing = false;
  lastPassAt: Date | null = null;
  lastReport: PassReport | null = null;

  /** @internal Built by the engine; inject it from WeftModule. */
  constructor(
    private readonly tasks: SchedulerTasks,
    readonly intervalMs: number,
    private readonly logger: WeftLogger,
  ) {
    // Renewal: small jitter, it must keep its cadence. Maintenance: on wall-clock slots of the
    // interval (plus at most 10 ms), so every survivor scans right after a dead engine's
    // claims expire, at the same time: their cycles interleave and they share the orphans
    // (SKIP LOCKED, random order) instead of whoever scans first taking them all.
    this.renewal = new Loop(
      () => this.renew(),
      () => intervalMs * (0.9 + Math.random() * 0.1),
    );
    this.maintenance = new Loop(
      () => this.maintain(),
      () => nextSlotDelay(intervalMs),
    );
  }

  get isDisposing(): boolean {
    return this.disposing;
  }

  start(): void {
    if (this.disposing) return;
    this.renewal.start(0);
    this.maintenance.start(0);
  }

  /** One renewal then one maintenance pass now; joins runs in flight. */
  async runPass(): Promise<PassReport> {
    const t0 = performance.now();
    const r = await this.renewal.run(); // sets lastPassAt
    const m = this.disposing ? { reclaimed: 0, polled: 0 } : await this.maintenance.run();
    const report: PassReport = { ...r, ...m, durationMs: performance.now() - t0 };
    this.lastReport = report;
    return report;
  }

  /** Shutdown began: no reclaim cycle starts after this; renewal keeps claims alive meanwhile. */
  async stopMaintenance(): Promise<void> {
    this.disposing = true;
    await this.maintenance.stop();
  }

  /** Stops scheduling first (no reclaim can start after this), then waits for runs in flight. */
  async stop(): Promise<void> {
    this.disposing = true;
    await Promise.all([this.renewal.stop(), this.maintenance.stop()]);
  }

  private async renew(): Promise<{ renewed: number; lost: string[] }> {
    this.lastPassAt = new Date();
    try {
      return await this.tasks.renew();
    } catch (err) {
      this.logger.warn(`Claim renewal failed: ${(err as Error).message}`);
      return { renewed: 0, lost: [] };
    }
  }

  private async maintain(): Promise<{ reclaimed: number; polled: number }> {
    const out = { reclaimed: 0, polled: 0 };
    if (this.disposing) return out;
    try {
      out.reclaimed = await this.tasks.reclaim();
    } catch (err) {
      this.logger.warn(`Reclaim scan failed: ${(err as Error).message}`);
    }
    if (this.disposing) return out;
    try {
      out.polled = await this.tasks.poll();
    } catch (err) {
      this.logger.warn(`Owner-side poll failed: ${(err as Error).message}`);
    }
    return out;
  }
}
