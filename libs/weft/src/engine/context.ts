import { randomUUID } from 'node:crypto';
import { NonDeterminismError, OutsideWorkflowError, StepFailedError } from '../errors';
import type { OperationRecord } from '../storage/types';
import { Duration, parseDuration } from './duration';
import { Execution, NEVER } from './execution';
import { resolveRetry } from './retry';
import { describeError, runAttempts } from './step-runner';
import type { StepArgs, StepOptions, WeftLogger } from './types';
import { toStoredJson } from './validation';

/** What workflow code gets as `ctx`. Every call takes the next sequence number. */
export class WorkflowContext {
  readonly logger: WeftLogger;

  constructor(private readonly exec: Execution) {
    const prefix = `[${exec.definition.name}:${exec.workflowId}]`;
    const host = exec.host.logger;
    // Quiet while replaying, so a replay does not repeat old log lines.
    const say = (level: 'log' | 'warn' | 'error') => (m: string) => {
      if (!exec.isReplaying) host[level](`${prefix} ${m}`);
    };
    this.logger = { log: say('log'), warn: say('warn'), error: say('error') };
  }

  get workflowId(): string {
    return this.exec.workflowId;
  }

  /** Run number of this workflow id: 1, or more after idPolicy 'start-new-if-terminal'. */
  get attempt(): number {
    return this.exec.runNumber;
  }

  /** Aborted on cancel, timeout, suspension or loss of ownership. */
  get signal(): AbortSignal {
    return this.exec.abort.signal;
  }

  get isReplaying(): boolean {
    return this.exec.isReplaying;
  }

  private active(method: string): void {
    if (this.exec.state === 'finished') throw new OutsideWorkflowError(method);
  }

  /** The recorded operation at `seq`, checked against what the code calls now. */
  private replayed(seq: number, kind: string, name: string): OperationRecord | undefined | 'mismatch' {
    const rec = this.exec.history.get(seq);
    if (!rec) return undefined;
    if (rec.kind !== kind || rec.name !== name) {
      this.exec.host.onNonDeterminism(
        this.exec,
        new NonDeterminismError(this.exec.workflowId, seq, { kind: rec.kind, name: rec.name }, { kind, name }),
      );
      return 'mismatch';
    }
    return rec;
  }

  async step<T>(name: string, fn: (args: StepArgs) => T | Promise<T>, opts: StepOptions = {}): Promise<T> {
    this.active('step');
    const retry = resolveRetry(opts.retry);
    const timeoutMs = opts.timeout === undefined ? undefined : parseDuration(opts.timeout, `step "${name}" timeout`);
    const exec = this.exec;
    const seq = exec.nextSeq++;
    const rec = this.replayed(seq, 'step', name);
    if (rec === 'mismatch' || exec.state !== 'active') return NEVER;
    if (rec) return fromRecord(rec) as T;

    exec.inflightSteps++;
    try {
      // A body's side effects may only follow what earlier calls recorded.
      await exec.durable();
      if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
      const startedAt = new Date().toISOString();
      const idempotencyKey = `${exec.workflowId}:${seq}`;
      const t0 = performance.now();
      const out = await runAttempts(fn as (a: StepArgs) => unknown, { name, idempotencyKey, retry, timeoutMs, signal: exec.abort.signal });
      exec.host.stepFinished((performance.now() - t0) / 1000);
      if ('aborted' in out || exec.state !== 'active') return NEVER;
      let op: OperationRecord;
      if (out.ok) {
        const result = toStoredJson(out.value, `Result of step "${name}"`, exec.host.maxPayloadBytes);
        op = { seq, kind: 'step', name, status: 'completed', result, attempts: out.attempts, startedAt };
      } else {
        op = { seq, kind: 'step', name, status: 'failed', error: describeError(out.error), attempts: out.attempts, startedAt };
      }
      // Not awaited: the run goes on at once; the next step body, wait or the completion
      // waits for this record (durable() / the commit queue), so nothing observable gets ahead of it.
      void exec.commit({ operations: [op] });
      exec.history.set(seq, op);
      return fromRecord(op) as T;
    } finally {
      exec.inflightSteps--;
      exec.scheduleParkCheck();
    }
  }

  /** Durable timer; survives restarts. */
  async sleep(duration: Duration): Promise<void> {
    this.active('sleep');
    const ms = parseDuration(duration, 'ctx.sleep duration');
    const exec = this.exec;
    const seq = exec.nextSeq++;
    const rec = this.replayed(seq, 'sleep', 'sleep');
    if (rec === 'mismatch' || exec.state !== 'active') return NEVER;
    if (rec) return;
    const timer = exec.timers.get(seq);
    const due = ms === 0 || exec.firedTimers.has(seq) || (timer !== undefined && timer <= exec.loadedAtDbNow);
    if (due) {
      const op: OperationRecord = { seq, kind: 'sleep', name: 'sleep', status: 'completed', result: null };
      await exec.commit({ operations: [op], deleteTimers: [{ kind: 'sleep', seq }] });
      exec.history.set(seq, op);
      return;
    }
    const parked = exec.wait(seq, { kind: 'sleep' });
    if (!timer) {
      await exec.commit({ timers: [{ kind: 'sleep', seq, delayMs: ms }] });
      exec.timers.set(seq, new Date(Date.now() + ms));
      exec.host.onTimerScheduled(exec.workflowId, ms);
    }
    return parked;
  }

  now(): Date {
    return new Date(this.recorded('now', () => Date.now()) as number);
  }

  random(): number {
    return this.recorded('random', () => Math.random()) as number;
  }

  uuid(): string {
    return this.recorded('uuid', () => randomUUID()) as string;
  }

  private recorded(kind: string, make: () => unknown): unknown {
    this.active(kind);
    const exec = this.exec;
    const seq = exec.nextSeq++;
    const rec = this.replayed(seq, kind, kind);
    if (rec === 'mismatch') throw new NonDeterminismStop();
    if (rec) return rec.result;
    const value = make();
    exec.recordLazy({ seq, kind, name: kind, status: 'completed', result: value });
    return value;
  }
}

/** Thrown into synchronous ctx calls after a non-determinism was handled; the run is already stopped. */
export class NonDeterminismStop extends Error {
  constructor() {
    super('Workflow stopped: non-deterministic replay');
  }
}

function fromRecord(rec: OperationRecord): unknown {
  if (rec.status === 'failed') {
    const e = (rec.error ?? {}) as { name?: string; message?: string };
    throw new StepFailedError(rec.name, rec.attempts ?? 1, e.name ?? 'Error', e.message ?? '');
  }
  return rec.result;
}
