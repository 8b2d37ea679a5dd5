import type { AdvanceCommand, AdvanceOutcome, OperationRecord } from '../storage/types';
import type { WeftLogger, WorkflowDefinition } from './types';

export type Change = Omit<AdvanceCommand, 'workflowId' | 'expectedVersion' | 'fence'>;

/** What an execution needs from its engine. */
export interface ExecutionHost {
  /** The one commit path: the host adds the fence and sends it through the group committer. */
  commit(exec: Execution, command: AdvanceCommand): Promise<AdvanceOutcome>;
  /** The commit was refused (version moved or fence lost): the execution is stale. */
  onStale(exec: Execution, reason: 'version' | 'fence' | 'error', err?: unknown): void;
  onParked(exec: Execution): void;
  onTimerScheduled(workflowId: string, delayMs: number): void;
  /** Replay met a different call than the history holds: suspend the workflow. */
  onNonDeterminism(exec: Execution, err: Error): void;
  /** May a step body start now? False deposes the workflow here (ownership). */
  mayRun(exec: Execution): boolean;
  stepFinished(seconds: number): void;
  readonly maxPayloadBytes: number;
  readonly logger: WeftLogger;
}

interface Wait {
  kind: 'sleep';
  resolve(): void;
}

/** A promise that never settles: what ctx calls return once an execution has been stopped. */
export const NEVER: Promise<never> = new Promise<never>(() => undefined);

const LIST_FIELDS = ['operations', 'deleteTimers', 'timers', 'messages', 'consume'] as const;

function merge(into: Change, c: Change): Change {
  const out: Change = { ...into };
  if (c.status !== undefined) out.status = c.status;
  if (c.output !== undefined) out.output = c.output;
  if (c.error !== undefined) out.error = c.error;
  if (c.completed) out.completed = true;
  if (c.clearTimers) out.clearTimers = true;
  for (const f of LIST_FIELDS) {
    const add = c[f];
    if (add?.length) (out as Record<string, unknown[]>)[f] = [...(into[f] ?? []), ...add];
  }
  return out;
}

/**
 * One workflow's run in memory: its history, version and serialized commit queue. At most one
 * commit per execution is in flight; changes queued meanwhile are merged into the next one.
 */
export class Execution {
  readonly abort = new AbortController();
  state: 'active' | 'stopped' | 'finished' = 'active';
  /** Claim epoch this run was launched under (wake ownership check). */
  epoch: string | undefined;
  nextSeq = 0;
  inflightSteps = 0;
  parked = false;
  readonly waits = new Map<number, Wait>();
  readonly firedTimers = new Set<number>();
  /** now/random/uuid values: recorded with the next commit, so they cost no round trip. */
  private lazyOps: OperationRecord[] = [];
  private queue: Array<{ change: Change; resolve(): void }> = [];
  private committing = false;
  private flushScheduled = false;
  private parkCheckScheduled = false;
  readonly maxRecordedSeq: number;

  constructor(
    readonly host: ExecutionHost,
    readonly workflowId: string,
    readonly definition: WorkflowDefinition,
    readonly input: unknown,
    readonly runNumber: number,
    public version: number,
    readonly history: Map<number, OperationRecord>,
    readonly timers: Map<number, Date>,
    readonly loadedAtDbNow: Date,
  ) {
    this.maxRecordedSeq = history.size ? Math.max(...history.keys()) : -1;
  }

  get isReplaying(): boolean {
    return this.nextSeq <= this.maxRecordedSeq;
  }

  recordLazy(op: OperationRecord): void {
    this.lazyOps.push(op);
    this.history.set(op.seq, op);
  }

  /** Queues a change; resolves once it is durable. Never settles if the execution goes stale. */
  commit(change: Change, terminal = false): Promise<void> {
    if (this.state !== 'active' && !(terminal && this.state === 'finished')) return NEVER;
    return new Promise<void>((resolve) => {
      this.queue.push({ change, resolve });
      this.scheduleFlush();
    });
  }

  /**
   * Flushes on the next macrotask, so changes the run makes before its next wait (e.g. a
   * step's record and the completion right after it) share one commit.
   */
  private scheduleFlush(): void {
    if (this.committing || this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (!this.committing) void this.flush();
    });
  }

  /** Resolves once everything queued so far is durable (never, if the execution goes stale). */
  durable(): Promise<void> {
    if (this.queue.length === 0 && !this.committing && this.lazyOps.length === 0) return Promise.resolve();
    return this.commit({});
  }

  private async flush(): Promise<void> {
    this.committing = true;
    try {
      while (this.queue.length > 0 && this.state !== 'stopped') {
        const batch = this.queue.splice(0);
        let change: Change = { operations: this.lazyOps };
        this.lazyOps = [];
        for (const b of batch) change = merge(change, b.change);
        let outcome: AdvanceOutcome;
        try {
          outcome = await this.host.commit(this, { ...change, workflowId: this.workflowId, expectedVersion: this.version });
        } catch (err) {
          this.stop();
          this.host.onStale(this, 'error', err);
          return;
        }
        if (!outcome.ok) {
          this.stop();
          this.host.onStale(this, outcome.reason);
          return;
        }
        this.version = outcome.version;
        for (const b of batch) b.resolve();
      }
    } finally {
      this.committing = false;
      this.scheduleParkCheck();
    }
  }

  /**
   * Drops the run: every pending and future ctx call never settles. `abort` also aborts
   * ctx.signal (cancel, timeout, lost ownership); eviction of a parked run does not.
   */
  stop(abort = true): void {
    if (this.state === 'active') this.state = 'stopped';
    this.queue = [];
    this.waits.clear();
    if (abort && !this.abort.signal.aborted) this.abort.abort();
  }

  wait(seq: number, wait: Omit<Wait, 'resolve'>): Promise<void> {
    if (this.state !== 'active') return NEVER;
    return new Promise<void>((resolve) => {
      this.waits.set(seq, { ...wait, resolve });
      this.scheduleParkCheck();
    });
  }

  /** A due timer for a live wait: record it and continue. False when nothing here waits on it. */
  fireTimer(seq: number): boolean {
    const w = this.waits.get(seq);
    if (!w || this.state !== 'active') return false;
    this.waits.delete(seq);
    this.parked = false;
    void this.commit({
      operations: [{ seq, kind: 'sleep', name: 'sleep', status: 'completed', result: null }],
      deleteTimers: [{ kind: 'sleep', seq }],
    }).then(() => {
      this.history.set(seq, { seq, kind: 'sleep', name: 'sleep', status: 'completed', result: null });
      w.resolve();
    });
    return true;
  }

  /** Parked = nothing running, nothing committing, only waits: the engine may evict it. */
  scheduleParkCheck(): void {
    if (this.parkCheckScheduled) return;
    this.parkCheckScheduled = true;
    setImmediate(() => {
      this.parkCheckScheduled = false;
      const parked =
        this.state === 'active' && this.inflightSteps === 0 && !this.committing && this.queue.length === 0 && this.waits.size > 0;
      if (parked && !this.parked) {
        this.parked = true;
        this.host.onParked(this);
      } else if (!parked) this.parked = false;
    });
  }
}
