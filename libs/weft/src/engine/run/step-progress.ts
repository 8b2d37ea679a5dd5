// A live step's progress beyond its attempts (docs/long-steps.md): the details of its last
// heartbeat, its attempt and its first start. An earlier owner's saved progress is loaded with
// the run, so a step taken over resumes from its last heartbeat, counts on from its attempt and
// keeps retry.maxElapsed's clock. Saving goes through the engine's HeartbeatWriter, in batches.
import type { StepCompletion, StepProgressRow, StepProgressWrite } from '../../storage/repositories/step-progress.repository.js';
import { toStoredJson } from '../validation.js';

/** Where a step's progress is saved (heartbeat-writer.ts): the latest of each step, in batches. */
export interface ProgressSink {
  /** Queues the step's current progress (the latest state is written at the next flush). */
  save(progress: StepProgress): void;
  /** The step ended (its record committed, or it never will be): its row, if one was queued or written, is removed. */
  forget(progress: StepProgress): void;
}

export class StepProgress {
  /** The last details saved, `{ value }`, this attempt's, an earlier one's or an earlier owner's. */
  private last: { value: unknown } | undefined;
  /** When the step's first attempt began, on workflow time (retry.maxElapsed counts from it). */
  firstStartedAt: number | undefined;
  /** The attempts an earlier owner began (this engine counts on from them). */
  readonly attemptsBefore: number;
  /** The attempt running now. */
  attempt = 0;
  /** performance.now() of the running attempt's start or last heartbeat (heartbeatTimeout). */
  lastBeatAt = 0;
  /** Queued or written to storage once: its end removes the row. */
  stored = false;
  private ended = false;
  /** An earlier owner saved it: its row exists. */
  readonly loaded: boolean;
  /** An external completion that landed while no engine ran the step (taken by its next attempt). */
  private loadedCompletion: StepCompletion | undefined;

  constructor(
    readonly workflowId: string,
    readonly runNumber: number,
    readonly seq: number,
    private readonly name: string,
    private readonly sink: ProgressSink,
    private readonly maxBytes: number,
    loaded?: StepProgressRow,
    /** The claim epoch its run was launched under: its saves are fenced with it (heartbeat-writer.ts). */
    readonly runEpoch?: string,
  ) {
    this.attemptsBefore = loaded?.attempt ?? 0;
    this.loaded = loaded !== undefined;
    if (loaded) {
      this.last = loaded.details;
      this.firstStartedAt = loaded.firstStartedAt.getTime();
      this.stored = true;
      this.loadedCompletion = loaded.completion;
    }
  }

  /** Its row exists (an external completion wrote it): its end removes it. */
  rowWritten(): void {
    this.stored = true;
  }

  /** The external completion stored before this engine took the step over, once. */
  takeLoadedCompletion(): StepCompletion | undefined {
    const c = this.loadedCompletion;
    this.loadedCompletion = undefined;
    return c;
  }

  /** Its outcome is decided: nothing more of it is saved. */
  get hasEnded(): boolean {
    return this.ended;
  }

  get lastHeartbeat(): unknown {
    return this.last?.value;
  }

  /**
   * An attempt begins. `keepStart`: note the first start and save it now (retry.maxElapsed across
   * a takeover); `timed`: heartbeatTimeout counts from here. A step with neither reads no clock.
   */
  attemptBegins(attempt: number, keepStart: boolean, timed: boolean, now: number = Date.now()): void {
    this.attempt = attempt;
    if (timed) this.lastBeatAt = performance.now();
    if (keepStart && this.firstStartedAt === undefined) {
      this.firstStartedAt = now;
      this.queue();
    }
  }

  /**
   * `currentStep().heartbeat(details)` of `attempt`: checked as a payload (a throw reaches the body),
   * kept, and queued for the next batch. A late beat of an attempt that ended does nothing.
   */
  beat(attempt: number, details: unknown): void {
    if (this.ended || attempt !== this.attempt) return;
    const value = details === undefined ? undefined : toStoredJson(details, `Heartbeat details of step "${this.name}"`, this.maxBytes);
    this.lastBeatAt = performance.now();
    if (value !== undefined) this.last = { value };
    this.queue();
  }

  /**
   * The step's outcome is decided: nothing more is saved, and its row goes, once `recorded` (its
   * record's commit) is durable when given. A record that never commits (the engine was deposed)
   * leaves the row to the step's next owner, which resumes from it.
   */
  end(recorded?: Promise<void>): void {
    if (this.ended) return;
    this.ended = true;
    if (!this.stored) return;
    if (recorded) void recorded.then(() => this.sink.forget(this));
    else this.sink.forget(this);
  }

  /** What the writer stores now. */
  toWrite(): StepProgressWrite {
    return {
      workflowId: this.workflowId,
      runNumber: this.runNumber,
      seq: this.seq,
      attempt: this.attempt,
      // Without maxElapsed the first start is not noted: the first save stands for it.
      firstStartedAt: new Date((this.firstStartedAt ??= Date.now())),
      details: this.last,
    };
  }

  private queue(): void {
    this.stored = true;
    this.sink.save(this);
  }
}
