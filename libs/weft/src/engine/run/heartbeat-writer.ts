// Heartbeats off the hot path (docs/long-steps.md): a step's heartbeat only marks it; every
// `flushMs` one statement writes the latest progress of every step that beat meanwhile and
// removes the rows of steps that ended. A thousand steps beating ten times a second cost one
// statement a second, not ten thousand commits. Saves carry the fence a commit would: a deposed
// engine's late batch is refused (step-progress.repository.ts).
import type { WeftLogger } from '../../common/types.js';
import type { RunFence } from '../../ownership/roles.js';
import type { StepProgressKey, StepProgressRepository } from '../../storage/repositories/step-progress.repository.js';
import type { ProgressSink, StepProgress } from './step-progress.js';

export class HeartbeatWriter implements ProgressSink {
  private saves = new Set<StepProgress>();
  private removes: StepProgressKey[] = [];
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private closed = false;
  /** Heartbeats taken, statements written and their total round trip in ms (bench/heartbeats.ts). */
  readonly stats = { beats: 0, statements: 0, ms: 0 };

  constructor(
    private readonly repo: Pick<StepProgressRepository, 'flush'>,
    private readonly logger: WeftLogger,
    /** How often the latest heartbeats are written (how old the details a takeover resumes from may be). */
    private readonly flushMs: number,
    /** The fences of this engine's writes (ownership). */
    private readonly fence: Pick<RunFence, 'claimFence' | 'leaseFence'>,
  ) {}

  save(progress: StepProgress): void {
    if (this.closed) return;
    this.stats.beats++;
    this.saves.add(progress);
    this.arm();
  }

  forget(progress: StepProgress): void {
    // Never written (nor loaded): dropping the queued save is enough.
    if (this.saves.delete(progress) && !this.written.has(progress) && !progress.loaded) return;
    this.written.delete(progress);
    if (this.closed) return;
    this.removes.push({ workflowId: progress.workflowId, runNumber: progress.runNumber, seq: progress.seq });
    this.arm();
  }

  /** Steps of this engine whose row a flush wrote: their end removes it. */
  private readonly written = new WeakSet<StepProgress>();

  /** Writes what is queued now (graceful shutdown, tests). */
  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.saves.size === 0 && this.removes.length === 0) return;
    const saves = [...this.saves];
    const removes = this.removes;
    this.saves = new Set();
    this.removes = [];
    const writes = saves.map((p) => ({ ...p.toWrite(), fence: this.fence.claimFence(p.workflowId, p.runEpoch) }));
    const t0 = performance.now();
    this.flushing = this.repo
      .flush(writes, removes, this.fence.leaseFence())
      .then(
        () => {
          this.stats.statements++;
          this.stats.ms += performance.now() - t0;
          for (const p of saves) this.written.add(p);
        },
        (err: unknown) => {
          // Kept for the next flush, but not those whose step ended meanwhile: written beside their
          // removal in one statement, the upsert would win and leave the row of an ended step.
          this.logger.warn(`Heartbeats could not be saved (tried again in ${this.flushMs} ms): ${(err as Error).message}`);
          for (const p of saves) if (!this.closed && !p.hasEnded) this.saves.add(p);
          this.removes.push(...removes);
          this.arm();
        },
      )
      .finally(() => (this.flushing = undefined));
    await this.flushing;
  }

  /** Writes what is queued, then takes no more. */
  async close(): Promise<void> {
    await this.flush().catch(() => undefined);
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private arm(): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, this.flushMs);
    this.timer.unref?.();
  }
}
