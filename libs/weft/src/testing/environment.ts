import type { Duration } from '../common/duration.js';
import { InvalidArgumentError } from '../common/errors.js';
import type { OperationRecord, StartOptions, WorkflowDefinition, WorkflowDescription } from '../common/types.js';
import { WeftEngine } from '../engine/engine.js';
import type { WorkflowHandle } from '../engine/handle.js';
import type { WeftEngineOptions } from '../engine/options.js';
import type { WorkflowClass } from '../engine/registry.js';
import { asStep, stepMetadataOf } from '../nest/decorators/step-call.js';
import { SkippingClock } from './test-clock.js';
import { WeftTestClock } from './test-clock.control.js';
import { testDatabase, type TestDatabase } from './test-database.js';

/** How often autoSkip looks whether every live workflow waits on time (real ms). */
const AUTO_SKIP_POLL_MS = 5;

/** What both WeftTestEnvironment.create and WeftTestingModule.forRoot take. */
export interface WeftTestingOptions {
  /** The server (default: WEFT_TEST_DATABASE_URL, else the embedded server); each environment gets its own schema on it. */
  databaseUrl?: string;
  /** The schema (default: a fresh `weft_test_<time>_<random>`). */
  schema?: string;
  /** Keep the schema after close (default false: dropped with its tables). */
  keepSchema?: boolean;
  /** Skip to the next due time whenever every live workflow waits on one (default false). */
  autoSkip?: boolean;
  /** Real time an advance waits for the runs it woke to park or end (default 30s). */
  settleTimeout?: Duration;
}

export interface WeftTestEnvironmentOptions extends WeftTestingOptions {
  /** The workflow types: definitions, or `[name, Class]` for classes built with `new`. */
  workflows?: Array<WorkflowDefinition | [string, WorkflowClass]>;
  /** Further engine options (ownership, queues, retention, ...). */
  engine?: Omit<WeftEngineOptions, 'database' | 'schema' | 'clock'>;
}

/** @internal What the environment is made of, whichever way it was built. */
export interface TestParts {
  clock: SkippingClock;
  db: TestDatabase;
  options: WeftTestingOptions;
}

/** @internal Opens the environment's schema and clock (the engine comes later, from WeftModule or create()). */
export async function testParts(options: WeftTestingOptions): Promise<TestParts> {
  return { clock: new SkippingClock(), db: await testDatabase(options), options };
}

type Restore = () => void;
type AnyMethod = (...args: unknown[]) => unknown;
type Methods<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T] & string;

/**
 * A Weft engine for tests on a schema of its own, with a workflow clock that skips time
 * (docs/testing.md). `WeftTestEnvironment.create(opts)` in plain tests; in a Nest test
 * (WeftTestingModule) it is `app.get(WeftTestEnvironment)`.
 */
export class WeftTestEnvironment {
  /** The environment's workflow time: `advance('30d')`, `now()`. */
  readonly clock: WeftTestClock;
  private readonly restores: Restore[] = [];
  private skipTimer: NodeJS.Timeout | undefined;
  private autoSkip: boolean;
  private closing: Promise<void> | undefined;

  /** @internal Use WeftTestEnvironment.create, or WeftTestingModule in a Nest test. */
  constructor(
    readonly engine: WeftEngine,
    private readonly parts: TestParts,
    private readonly ownsEngine: boolean,
    private readonly resolve?: (Service: abstract new (...args: never[]) => unknown) => unknown,
  ) {
    this.clock = new WeftTestClock(parts.clock, () => this.engine, { settleTimeout: parts.options.settleTimeout });
    this.autoSkip = parts.options.autoSkip === true;
  }

  /** An engine on a fresh schema, its workflows registered and bootstrapped. */
  static async create(opts: WeftTestEnvironmentOptions = {}): Promise<WeftTestEnvironment> {
    const parts = await testParts(opts);
    const engine = await WeftEngine.create({
      logger: quietLogger,
      ...opts.engine,
      database: { url: parts.db.url },
      schema: parts.db.schema,
      clock: parts.clock,
    }).catch(async (err: unknown) => {
      if (!opts.keepSchema) await parts.db.drop().catch(() => undefined);
      await parts.db.release();
      throw err;
    });
    const env = new WeftTestEnvironment(engine, parts, true);
    try {
      for (const w of opts.workflows ?? []) {
        if (Array.isArray(w)) engine.register(w[0], w[1]);
        else engine.register(w);
      }
      await engine.bootstrap();
    } catch (err) {
      await env.close();
      throw err;
    }
    env.started();
    return env;
  }

  /** The schema it runs on (dropped at close unless keepSchema). */
  get schema(): string {
    return this.parts.db.schema;
  }

  /** The server's URL (the schema is `schema`). */
  get databaseUrl(): string {
    return this.parts.db.url;
  }

  start<I>(type: string, input: I, opts?: StartOptions): Promise<WorkflowHandle> {
    return this.engine.start(type, input, opts);
  }

  /** Starts a workflow and waits for its result (with autoSkip, time skips while it waits on timers). */
  async runWorkflow<O = unknown, I = unknown>(type: string, input: I, opts?: StartOptions & { timeout?: Duration }): Promise<O> {
    const { timeout, ...start } = opts ?? {};
    const handle = await this.engine.start(type, input, start);
    return this.engine.result<O>(handle.workflowId, { timeout });
  }

  result<O = unknown>(workflowId: string, opts?: { timeout?: Duration }): Promise<O> {
    return this.engine.result<O>(workflowId, opts);
  }

  /** Sends a signal and waits until the run it woke has parked or ended. */
  async signal(workflowId: string, name: string, payload?: unknown): Promise<void> {
    await this.engine.signal(workflowId, name, payload);
    await this.clock.settle();
  }

  describe(workflowId: string): Promise<WorkflowDescription> {
    return this.engine.describe(workflowId);
  }

  /** The `history` array of describe: the workflow's recorded operations, in order. */
  async history(workflowId: string): Promise<OperationRecord[]> {
    return (await this.engine.describe(workflowId)).history;
  }

  /**
   * Replaces the body of a `@Step()` method for the rest of this environment: a call from a
   * workflow is still the recorded step of the same name and options (replay returns its
   * record; the double is not called again). Restored at close.
   */
  mockStep<T, K extends Methods<T>>(Service: abstract new (...args: never[]) => T, method: K, impl: T[K]): void {
    const meta = stepMetadataOf(Service, method);
    if (!meta) throw new InvalidArgumentError(`mockStep(${Service.name}, '${method}')`, 'is not a @Step() method of that class');
    if (typeof impl !== 'function') throw new InvalidArgumentError(`mockStep(${Service.name}, '${method}')`, 'needs a function');
    const wrapped = asStep(meta.name, meta.options, impl as AnyMethod, meta.transaction);
    const proto = Service.prototype as Record<string, unknown>;
    const before = proto[method];
    proto[method] = wrapped;
    this.restores.push(() => (proto[method] = before));
    // The provider the app injects, when it is not an instance of the class (a double) or has the method as its own field.
    const instance = this.resolve?.(Service) as Record<string, unknown> | undefined;
    if (instance && typeof instance === 'object' && (!(instance instanceof Service) || Object.hasOwn(instance, method))) {
      const own = Object.getOwnPropertyDescriptor(instance, method);
      instance[method] = wrapped;
      this.restores.push(() => (own ? Object.defineProperty(instance, method, own) : delete instance[method]));
    }
  }

  /** Disposes the engine (when the environment made it) and drops the schema unless keepSchema. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.stopAutoSkip();
      if (this.ownsEngine) await this.engine.dispose();
      for (const restore of this.restores.reverse()) restore();
      try {
        if (!this.parts.options.keepSchema) await this.parts.db.drop();
      } finally {
        await this.parts.db.release();
      }
    })();
    return this.closing;
  }

  /** @internal The engine is up: autoSkip may begin. */
  started(): void {
    if (this.autoSkip && !this.skipTimer) this.scheduleSkip();
  }

  /** @internal The engine is going away (the Nest app closes): nothing more is skipped. */
  stopAutoSkip(): void {
    clearTimeout(this.skipTimer);
    this.skipTimer = undefined;
    this.autoSkip = false;
  }

  private scheduleSkip(): void {
    this.skipTimer = setTimeout(() => {
      void this.autoSkipOnce()
        .catch(() => undefined) // the next round looks again; an advance that failed reports to its own caller
        .finally(() => this.autoSkip && this.scheduleSkip());
    }, AUTO_SKIP_POLL_MS);
    this.skipTimer.unref();
  }

  /** Every live workflow waits on time and nothing runs: jump to the next due time. */
  private async autoSkipOnce(): Promise<void> {
    if (this.engine.isDisposed || !this.engine.isQuiet || !(await this.engine.allWaitOnTime())) return;
    const next = await this.clock.nextDueAt();
    if (next !== null && this.engine.isQuiet) await this.clock.skipTo(next);
  }
}

/** Tests read results, not the engine's start-up lines; warnings and errors still show. */
const quietLogger = {
  log: () => undefined,
  warn: (m: string) => console.warn(`[weft] ${m}`),
  error: (m: string) => console.error(`[weft] ${m}`),
};
