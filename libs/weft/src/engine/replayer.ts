import { InvalidArgumentError, NonDeterminismError } from '../common/errors.js';
import type { OperationRecord, WeftLogger, WorkflowDefinition } from '../common/types.js';
import { replayDelivery } from './run/delivery.js';
import { Execution, ExecutionHost, NEVER } from './run/execution.js';
import { startRun } from './run/run-start.js';
import type { WorkflowClass } from './registry.js';
import { NOOP_TRACER, type EngineTracing } from '../observability/tracing.js';
import { systemClock } from './clock.js';

/** A recorded run as `describe` returns it (`engine.describe`, `GET <prefix>/workflows/:id`, `weft describe --json`). */
export interface RecordedWorkflow {
  workflowId: string;
  type: string;
  input: unknown;
  runNumber?: number;
  history: OperationRecord[];
}

export type ReplayReport =
  { workflowId: string; type: string; ok: true } | { workflowId: string; type: string; ok: false; error: NonDeterminismError | Error };

const silent: WeftLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

/**
 * Replays recorded histories against the code as it is now, running nothing and writing
 * nothing, and reports the first operation the code no longer makes: a test in the users' CI
 * that catches a breaking change to a workflow before it is deployed (docs/versioning.md).
 */
export class WorkflowReplayer {
  private readonly defs = new Map<string, WorkflowDefinition>();

  /** Workflow types as definitions, or `[name, Class]` pairs for classes built with `new`. */
  constructor(workflows: Array<WorkflowDefinition | [string, WorkflowClass]>) {
    for (const w of workflows) {
      const def: WorkflowDefinition = Array.isArray(w) ? { name: w[0], factory: () => new (w[1] as new () => never)() } : w;
      this.defs.set(def.name, def);
    }
  }

  /** The types an engine (a Nest app's `WeftEngine`, with its injected dependencies) runs. */
  static forEngine(engine: { definitions(): WorkflowDefinition[] }): WorkflowReplayer {
    return new WorkflowReplayer(engine.definitions());
  }

  /** Replays one run; `timeoutMs` bounds a replay whose code waits on something never recorded. */
  async replay(recorded: RecordedWorkflow, timeoutMs = 10_000): Promise<ReplayReport> {
    const { workflowId, type } = recorded;
    const def = this.defs.get(type);
    if (!def) throw new InvalidArgumentError(`workflow type "${type}"`, "is not one of the replayer's types");
    if (!Array.isArray(recorded.history)) throw new InvalidArgumentError('history', 'must be the array describe returns');
    const host = replayHost();
    const exec = new Execution(host, {
      workflowId,
      definition: def,
      input: recorded.input,
      runNumber: recorded.runNumber ?? 1,
      version: 0,
      parentId: null,
      history: new Map(recorded.history.map((op) => [op.seq, op])),
      readOnly: true,
    });
    let returned = false;
    const run = startRun(def, exec);
    run.then(
      () => (returned = true),
      () => (returned = true),
    );
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
    try {
      const how = await Promise.race([(exec.replay?.run() ?? Promise.resolve()).then(() => 'done' as const), timeout]);
      await new Promise((r) => setImmediate(r));
      const failure =
        exec.readOnlyFailure ??
        (how === 'timeout'
          ? new Error(`replay of "${workflowId}" did not finish within ${timeoutMs} ms`)
          : returned
            ? exec.replay?.endedEarly('run() returned first')
            : undefined);
      return failure ? { workflowId, type, ok: false, error: failure } : { workflowId, type, ok: true };
    } finally {
      clearTimeout(timer);
      exec.stop(false);
    }
  }

  /** Replays each; resolves with every report (the failures are the ones with `ok: false`). */
  async replayAll(recorded: Iterable<RecordedWorkflow>, timeoutMs?: number): Promise<ReplayReport[]> {
    const out: ReplayReport[] = [];
    for (const r of recorded) out.push(await this.replay(r, timeoutMs));
    return out;
  }
}

/** Everything is read-only: nothing runs live, nothing is written, a divergence is kept. */
function replayHost(): ExecutionHost {
  return {
    commit: () => NEVER,
    onStale: () => undefined,
    onCommitError: () => false,
    pauseBeforeRetry: () => Promise.resolve(),
    onParked: () => undefined,
    wantSlot: () => undefined,
    timers: { armed: () => undefined, cleared: () => undefined },
    onNonDeterminism(exec, err) {
      if (exec.state === 'active') exec.failReadOnly(err);
    },
    mayRun: () => false,
    stepFinished: () => undefined,
    pump: () => undefined,
    rebuild: () => undefined,
    applyDelivery: (exec, rec) => replayDelivery(exec, rec),
    startChild: () => NEVER,
    appendStream: () => NEVER,
    external: { start: () => NEVER, cancel: () => NEVER, status: () => NEVER },
    continueAsNew: () => undefined,
    transactions: { beginTransaction: () => NEVER, commitInTransaction: () => NEVER, withinAmbient: (_m, fn) => fn() },
    maxPayloadBytes: Number.MAX_SAFE_INTEGER,
    heartbeats: { save: () => undefined, forget: () => undefined },
    completions: { wait: () => NEVER },
    logger: silent,
    // Nothing ran, so nothing is traced.
    options: { tracing: { tracer: NOOP_TRACER } as unknown as EngineTracing, clock: systemClock },
  };
}
