import { NonDeterminismError } from '../../common/errors.js';
import type { OperationRecord } from '../../common/types.js';
import { operationKind } from '../../common/operation-kinds.js';

/** Recorded when it happened to the workflow (not called by its code): applied by the driver. */
const isDelivery = (rec: OperationRecord) => operationKind(rec.kind)?.replayed === 'applied';
/** The code gets it back synchronously: released at call time, not in order. */
const isAtCall = (rec: OperationRecord) => operationKind(rec.kind)?.replayed === 'at-call';

const settle = () => new Promise<void>((r) => setImmediate(r));

export interface ReplayTarget {
  readonly workflowId: string;
  readonly nextSeq: number;
  /** Takes the seq where the run is (see Execution.takeSeq). */
  takeSeq(skipMarkers: boolean): number;
  /** Passes over deprecated patch markers the code no longer calls (see Execution.takeSeq). */
  skipDeprecatedMarkers(): void;
  isActive(): boolean;
  applyDelivery(rec: OperationRecord): void;
  nonDeterminism(err: Error): void;
}

/**
 * Releases recorded results in the order they resolved in the live run (`event`), letting the
 * workflow code run to its next wait between two releases. Signal-handler deliveries are applied
 * at their place in that order, so replay reproduces every interleaving the live run saw.
 */
export class ReplayDriver {
  private readonly queue: OperationRecord[];
  private readonly pending = new Map<number, (rec: OperationRecord) => void>();
  private index = 0;
  private markDone!: () => void;
  /** Resolves once all history is released (never, if the run is stopped first). */
  readonly finished = new Promise<void>((r) => (this.markDone = r));
  private isDone = false;

  constructor(
    private readonly target: ReplayTarget,
    history: Iterable<OperationRecord>,
  ) {
    const ordered = [...history].filter((r) => !isAtCall(r));
    ordered.sort((a, b) => (a.event ?? a.seq) - (b.event ?? b.seq) || a.seq - b.seq);
    this.queue = ordered;
    if (ordered.length === 0) this.finish();
  }

  /** All history released: what the code does from here on is live. */
  get done(): boolean {
    return this.isDone;
  }

  private finish(): void {
    this.isDone = true;
    this.markDone();
  }

  /** The code called a recorded operation: its result comes when the driver reaches it. */
  expect(seq: number): Promise<OperationRecord> {
    return new Promise((resolve) => this.pending.set(seq, resolve));
  }

  /** Deliveries recorded before the code's first call (signal-with-start): applied before run(). */
  applyLeading(): void {
    while (this.index < this.queue.length) {
      const rec = this.queue[this.index];
      if (!isDelivery(rec)) break;
      this.target.skipDeprecatedMarkers();
      if (rec.seq !== this.target.nextSeq) break;
      this.target.takeSeq(false);
      this.target.applyDelivery(rec);
      this.index++;
    }
    if (this.index >= this.queue.length) this.finish();
  }

  /** Releases the history; resolves once the code has gone on from its end to its next wait. */
  async run(): Promise<void> {
    while (this.index < this.queue.length) {
      const rec = this.queue[this.index];
      await settle();
      if (!this.target.isActive()) return;
      if (isDelivery(rec)) {
        this.target.skipDeprecatedMarkers();
        if (this.target.nextSeq !== rec.seq) return this.diverged(rec, `the code is at operation ${this.target.nextSeq}`);
        this.target.takeSeq(false);
        this.target.applyDelivery(rec);
      } else {
        let release = this.pending.get(rec.seq);
        for (let i = 0; !release && i < 3; i++) {
          await settle();
          release = this.pending.get(rec.seq);
        }
        if (!this.target.isActive()) return;
        if (!release) return this.diverged(rec, 'the code never calls it');
        this.pending.delete(rec.seq);
        release(rec);
      }
      this.index++;
    }
    await settle();
    this.finish();
    // The live results held for the replay's end (Execution.afterReplay) reach the code now: it
    // runs to its next wait before run() resolves and the launcher delivers the inbox. Delivered
    // in between, a message took the seq of the code's next call, which its replay then makes.
    await settle();
  }

  /** Unreleased history left when the run ended means the code changed. */
  get remaining(): OperationRecord | undefined {
    return this.done ? undefined : this.queue[this.index];
  }

  /** The run ended (`how`) with history still to release: the first unreleased operation is the divergence. */
  endedEarly(how: string): NonDeterminismError | undefined {
    const rec = this.remaining;
    return rec && new NonDeterminismError(this.target.workflowId, rec.seq, { kind: rec.kind, name: rec.name }, { kind: 'none', name: how });
  }

  private diverged(rec: OperationRecord, why: string): void {
    this.target.nonDeterminism(
      new NonDeterminismError(this.target.workflowId, rec.seq, { kind: rec.kind, name: rec.name }, { kind: 'none', name: why }),
    );
  }
}
