// OpenTelemetry spans for workflow runs and steps (docs/operations.md#tracing). The API is an
// optional peer: it is imported lazily, once, from an async start path, and without it (or with
// tracing turned off) the engine holds NOOP_TRACER, whose run() returns undefined: the hot path
// then pays one `undefined` check per run and per step, and creates no span and no closure.
// Nothing here may fail a workflow: every call into the API is guarded, and the first failure
// is logged once.
import { detached } from '../common/detached.js';
import type * as Otel from '@opentelemetry/api';
import type { WeftLogger } from '../common/types.js';

type Api = Pick<typeof Otel, 'trace' | 'context' | 'ROOT_CONTEXT' | 'SpanStatusCode'>;

export const WEFT_TRACER_NAME = '@weft/nest';

/** What a trace reads of a run; the engine's Execution fits. */
export interface TracedRun {
  readonly workflowId: string;
  readonly definition: { readonly name: string };
  readonly runNumber: number;
  /** Recorded operations at launch: a span of a loaded run says how many it replayed. */
  readonly history: { readonly size: number };
  /** A run loaded from storage: its stored traceparent (or null); undefined for one that was not loaded. */
  readonly traceContext?: string | null;
  readonly waits: { values(): Iterable<{ kind: string }> };
}

/** The parts of a run's commit tracing reads (the engine's AdvanceCommand fits). */
export interface TracedCommand {
  status?: string;
  error?: { value: unknown };
  continueAsNew?: unknown;
  traceContext?: string;
}

/** Commits that end a run here; their span ends once they are durable. */
const ENDINGS = new Set(['completed', 'failed', 'suspended', 'continued_as_new']);

/** How a step ended (the step runner's outcome). */
export interface StepEnd {
  ok: boolean;
  attempts: number;
  error?: unknown;
  aborted?: boolean;
}

export interface WeftTracer {
  readonly enabled: boolean;
  /** The caller's active span as a W3C traceparent, stored with a start; undefined without one. */
  starterContext(): string | undefined;
  /** The caller's active context (opaque), taken before a start launches its run elsewhere. */
  activeContext(): unknown;
  /**
   * A run launched on this engine: its trace, or undefined when nothing is traced. `startContext`:
   * launched by the start that wrote it, whose active context it was (the run's parent span);
   * undefined: a root, linked to the stored context if loaded.
   */
  run(run: TracedRun, startContext?: unknown): WorkflowTrace | undefined;
}

/** Tracing off or the API absent: nothing is created, nothing is stored. */
export const NOOP_TRACER: WeftTracer = Object.freeze({
  enabled: false,
  starterContext: () => undefined,
  activeContext: () => undefined,
  run: () => undefined,
});

export interface TracingSetup {
  enabled: boolean;
  engineId: string;
  logger: WeftLogger;
  /** Imports `@opentelemetry/api`; rejects when it is not installed (tests inject one). */
  load?: () => Promise<unknown>;
}

const importApi = (): Promise<unknown> => import('@opentelemetry/api');

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

function traceparentOf(sc: Otel.SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** A stored traceparent as a remote span context; undefined when absent or malformed. */
function parseTraceparent(value: string | null | undefined): Otel.SpanContext | undefined {
  const m = value ? TRACEPARENT.exec(value) : null;
  if (!m || /^0+$/.test(m[1]) || /^0+$/.test(m[2])) return undefined;
  return { traceId: m[1], spanId: m[2], traceFlags: parseInt(m[3], 16), isRemote: true };
}

function apiOf(mod: unknown): Api | undefined {
  for (const m of [mod, (mod as { default?: unknown } | null)?.default]) {
    const api = m as Partial<Api> | null | undefined;
    if (typeof api?.trace?.getTracer === 'function' && typeof api.context?.with === 'function' && api.SpanStatusCode) return api as Api;
  }
  return undefined;
}

const isNotInstalled = (err: unknown) => ['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND'].includes((err as { code?: string })?.code ?? '');

const messageOf = (err: unknown): string =>
  err instanceof Error ? err.message : String((err as { message?: unknown } | null)?.message ?? err);

/** The tracer, or NOOP_TRACER when tracing is off or `@opentelemetry/api` is not installed. Never rejects. */
export async function loadTracer(setup: TracingSetup): Promise<WeftTracer> {
  if (!setup.enabled) return NOOP_TRACER;
  let mod: unknown;
  try {
    mod = await (setup.load ?? importApi)();
  } catch (err) {
    if (!isNotInstalled(err)) setup.logger.warn(`Tracing is off: @opentelemetry/api could not be loaded (${messageOf(err)}).`);
    return NOOP_TRACER;
  }
  const api = apiOf(mod);
  if (!api) {
    setup.logger.warn('Tracing is off: the installed @opentelemetry/api is not a usable version (^1.4.0 is needed).');
    return NOOP_TRACER;
  }
  try {
    return new OtelTracer(api, api.trace.getTracer(WEFT_TRACER_NAME), setup);
  } catch (err) {
    setup.logger.warn(`Tracing is off: ${messageOf(err)}`);
    return NOOP_TRACER;
  }
}

/** One run's spans on this engine (see OtelWorkflowTrace). */
export interface WorkflowTrace {
  /** A live step's span, a child of the workflow span. */
  step(seq: number, name: string): StepTrace | undefined;
  /** Runs `fn` (a child start) with the workflow span active. */
  within<T>(fn: () => T): T;
  /** Sends a commit of the run: carries the span's traceparent once, and ends the span on a committed end of the run. */
  commit<C extends TracedCommand, R extends { ok: boolean }>(command: C, send: (c: C) => Promise<R>): Promise<R>;
  park(): void;
  end(outcome: string, error?: unknown): void;
  /** The latest workflow span's traceparent (open or ended): what the next run of a continue-as-new links to. */
  traceparent(): string | undefined;
}

/** One step's span, across its attempts. */
export interface StepTrace {
  /** The body, run with the step span active. */
  wrap<A>(fn: (args: A) => unknown): (args: A) => unknown;
  end(out: StepEnd): void;
}

/** The engine's tracing: NOOP_TRACER until loadTracer settles (bootstrap and the first start await it). */
export class EngineTracing {
  tracer: WeftTracer = NOOP_TRACER;
  private loading: Promise<void> | undefined;
  private settled = false;
  /** The active context of the start launching a run now (see fromStart); undefined otherwise. */
  private startContext: unknown;

  constructor(private readonly setup: TracingSetup) {}

  /**
   * Launches a run from the start that wrote it (synchronously, inside `launch`), in no caller's
   * async context (common/detached.ts: the run would keep the caller's alive, a step body's run
   * with it), its trace's parent the context active at the start. A timer or a notification that
   * launches a run carries no start's context: that run is a root.
   */
  fromStart(launch: () => void): void {
    this.startContext = this.tracer.activeContext();
    try {
      detached(launch);
    } finally {
      this.startContext = undefined;
    }
  }

  /** The trace of a run being launched (see WeftTracer.run). */
  run(run: TracedRun): WorkflowTrace | undefined {
    return this.tracer.run(run, this.startContext);
  }

  /** Loads once; undefined once settled, so a start does not await anything after the first. */
  ready(): Promise<void> | undefined {
    if (this.settled) return undefined;
    return (this.loading ??= loadTracer(this.setup).then((t) => {
      this.tracer = t;
      this.settled = true;
    }));
  }
}

/** Runs `fn`; a tracing error is logged once and answered with `fallback`. */
class Guard {
  private reported = false;

  constructor(private readonly logger: WeftLogger) {}

  run<T>(fn: () => T, fallback: T): T {
    try {
      return fn();
    } catch (err) {
      this.report(err);
      return fallback;
    }
  }

  report(err: unknown): void {
    if (this.reported) return;
    this.reported = true;
    this.logger.warn(`Tracing failed (${messageOf(err)}); workflows are not affected. Later tracing errors are not logged.`);
  }
}

class OtelTracer implements WeftTracer {
  readonly enabled = true;
  readonly guard: Guard;
  readonly engineId: string;

  constructor(
    readonly api: Api,
    readonly tracer: Otel.Tracer,
    setup: TracingSetup,
  ) {
    this.guard = new Guard(setup.logger);
    this.engineId = setup.engineId;
  }

  starterContext(): string | undefined {
    return this.guard.run(() => {
      const sc = this.api.trace.getSpan(this.api.context.active())?.spanContext();
      return sc && this.api.trace.isSpanContextValid(sc) ? traceparentOf(sc) : undefined;
    }, undefined);
  }

  activeContext(): unknown {
    return this.guard.run(() => this.api.context.active(), undefined);
  }

  run(run: TracedRun, startContext?: unknown): WorkflowTrace | undefined {
    return this.guard.run(() => {
      // Any other launch is driven by whatever woke it (a reclaim scan, a timer, a notification):
      // that context is not the workflow's, so it is a root, linked to the stored context if loaded.
      const parent = (startContext as Otel.Context | undefined) ?? this.api.ROOT_CONTEXT;
      const trace = new OtelWorkflowTrace(this, run, parent, parseTraceparent(run.traceContext));
      return trace.recording ? trace : undefined;
    }, undefined);
  }
}

/** `fn` in `ctx`; if the context manager itself fails, `fn` runs outside it and the failure is reported. */
function runIn<A extends unknown[], T>(t: OtelTracer, ctx: Otel.Context, fn: (...args: A) => T, ...args: A): T {
  let called = false;
  const body = (...a: A) => ((called = true), fn(...a));
  try {
    return t.api.context.with(ctx, body, undefined, ...args);
  } catch (err) {
    if (called) throw err;
    t.guard.report(err);
    return fn(...args);
  }
}

/**
 * One run's spans on this engine. A workflow span lasts from launch (or a wake) until the run
 * finishes, parks, or is dropped here (evicted, claim lost, shutdown); a run that wakes in
 * memory gets a new one, with the same parent and a link to the one before. Each span's
 * traceparent rides on the run's next commit, so the engine that loads the run later (a
 * takeover among them) links its span to it.
 */
class OtelWorkflowTrace implements WorkflowTrace {
  private span: Otel.Span | undefined;
  private previous: Otel.SpanContext | undefined;
  private stamped = false;
  private ended = false;
  /** History at launch: what this stay replayed (later spans of the stay replayed nothing). */
  private replayed: number;
  readonly recording: boolean;

  constructor(
    private readonly t: OtelTracer,
    private readonly run: TracedRun,
    private readonly parent: Otel.Context,
    previous: Otel.SpanContext | undefined,
  ) {
    this.previous = previous;
    this.replayed = run.history.size;
    // No SDK registered: the API hands out non-recording spans with invalid ids; trace nothing.
    this.recording = t.api.trace.isSpanContextValid(this.current()!.spanContext());
  }

  /** The open workflow span, started if the run woke since the last one ended. */
  private current(): Otel.Span | undefined {
    if (this.span || this.ended) return this.span;
    const { api, tracer, engineId } = this.t;
    const run = this.run;
    this.span = tracer.startSpan(
      `weft.workflow ${run.definition.name}`,
      {
        attributes: {
          'weft.workflow.id': run.workflowId,
          'weft.workflow.type': run.definition.name,
          'weft.workflow.run_number': run.runNumber,
          'weft.engine.id': engineId,
          'weft.workflow.replayed_operations': this.replayed,
        },
        links: this.previous && api.trace.isSpanContextValid(this.previous) ? [{ context: this.previous }] : [],
      },
      this.parent,
    );
    this.stamped = false;
    this.replayed = 0;
    return this.span;
  }

  /** The current workflow span as the active context, for what nests under it. */
  private active(): Otel.Context | undefined {
    const wf = this.current();
    return wf && this.t.api.trace.setSpan(this.parent, wf);
  }

  /** A live step: its span, a child of the workflow span. */
  step(seq: number, name: string): StepTrace | undefined {
    return this.t.guard.run(() => {
      const ctx = this.active();
      if (!ctx) return undefined;
      const attributes = {
        'weft.step.name': name,
        'weft.step.seq': seq,
        'weft.workflow.id': this.run.workflowId,
        'weft.workflow.type': this.run.definition.name,
      };
      const span = this.t.tracer.startSpan(`weft.step ${name}`, { attributes }, ctx);
      return new OtelStepTrace(this.t, span, this.t.api.trace.setSpan(this.parent, span));
    }, undefined);
  }

  /** Runs `fn` (a child start) with the workflow span active, so the child's span nests under it. */
  within<T>(fn: () => T): T {
    const ctx = this.t.guard.run(() => this.active(), undefined);
    return ctx ? runIn(this.t, ctx, fn) : fn();
  }

  /**
   * Sends one of the run's commits: the first after a span began carries its traceparent, and
   * a committed end of the run (completed, failed, suspended, continued as new) ends the span.
   */
  commit<C extends TracedCommand, R extends { ok: boolean }>(command: C, send: (c: C) => Promise<R>): Promise<R> {
    const sent = send(this.stamp(command) ?? command);
    const outcome = command.continueAsNew !== undefined ? 'continued_as_new' : command.status;
    if (outcome && ENDINGS.has(outcome)) {
      sent.then(
        (o) => o.ok && this.end(outcome, command.error?.value),
        () => undefined,
      );
    }
    return sent;
  }

  /** The command with this span's traceparent, once per span; undefined when already sent. */
  private stamp<C extends object>(command: C): (C & { traceContext: string }) | undefined {
    if (this.stamped || this.ended) return undefined;
    return this.t.guard.run(() => {
      const wf = this.current();
      if (!wf) return undefined;
      this.stamped = true;
      return { ...command, traceContext: traceparentOf(wf.spanContext()) };
    }, undefined);
  }

  /** The run parked: its span ends; a wake starts the next one. */
  park(): void {
    const span = this.span;
    if (!span) return;
    this.span = undefined;
    this.stamped = false; // the next span's context goes with the commit that wakes the run
    this.t.guard.run(() => {
      this.previous = span.spanContext();
      const waiting = [...new Set([...this.run.waits.values()].map((w) => w.kind))];
      span.setAttributes({ 'weft.workflow.outcome': 'parked', 'weft.workflow.waiting': waiting });
      span.end();
    }, undefined);
  }

  traceparent(): string | undefined {
    return this.t.guard.run(() => {
      const sc = this.span?.spanContext() ?? this.previous;
      return sc && this.t.api.trace.isSpanContextValid(sc) ? traceparentOf(sc) : undefined;
    }, undefined);
  }

  /** The run ended (completed, failed, suspended, continued_as_new) or was dropped here ('stopped'). */
  end(outcome: string, error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.span;
    this.span = undefined;
    if (!span) return;
    this.t.guard.run(() => {
      this.previous = span.spanContext();
      span.setAttribute('weft.workflow.outcome', outcome);
      if (outcome === 'failed' || outcome === 'suspended') {
        span.setStatus({ code: this.t.api.SpanStatusCode.ERROR, message: messageOf(error ?? outcome) });
      }
      span.end();
    }, undefined);
  }
}

/** One step's span, across its attempts; the body of each attempt runs with it active. */
class OtelStepTrace implements StepTrace {
  private lastRecorded: unknown;

  constructor(
    private readonly t: OtelTracer,
    private readonly span: Otel.Span,
    private readonly context: Otel.Context,
  ) {}

  /** The body, run in the step span's context; each failed attempt's exception is recorded. */
  wrap<A>(fn: (args: A) => unknown): (args: A) => unknown {
    const observed = (args: A): unknown => {
      try {
        const out = fn(args);
        const then = (out as { then?: unknown } | null)?.then;
        return typeof then === 'function' ? Promise.resolve(out).catch((err: unknown) => this.failed(err)) : out;
      } catch (err) {
        return this.failed(err);
      }
    };
    return (args) => runIn(this.t, this.context, observed, args);
  }

  private failed(err: unknown): never {
    this.record(err);
    throw err;
  }

  private record(err: unknown): void {
    if (err === this.lastRecorded) return;
    this.lastRecorded = err;
    this.t.guard.run(() => this.span.recordException(err instanceof Error ? err : messageOf(err)), undefined);
  }

  end(out: StepEnd): void {
    this.t.guard.run(() => {
      const outcome = out.ok ? 'completed' : out.aborted ? 'aborted' : 'failed';
      this.span.setAttributes({ 'weft.step.attempts': out.attempts, 'weft.step.outcome': outcome });
      if (outcome === 'failed') {
        this.record(out.error); // a timeout rejects beside the body, so it is not recorded yet
        this.span.setStatus({ code: this.t.api.SpanStatusCode.ERROR, message: messageOf(out.error) });
      }
      this.span.end();
    }, undefined);
  }
}
