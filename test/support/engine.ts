import { WeftEngine } from '../../libs/weft/src/engine/engine.js';
import type { WeftEngineOptions } from '../../libs/weft/src/engine/options.js';
import type { WeftLogger, WorkflowContext } from '../../libs/weft/src/common/types.js';
import { createTestDatabase, TestDatabase } from './database.js';

export const quietLogger = (): WeftLogger & { lines: string[] } => {
  const lines: string[] = [];
  const push = (level: string) => (m: string) => void lines.push(`${level}: ${m}`);
  return { lines, log: push('log'), warn: push('warn'), error: push('error') };
};

/** Engines made for a test; disposed together in afterEach/afterAll. */
export class EnginePool {
  private engines: WeftEngine[] = [];

  constructor(private readonly url: string) {}

  async create(opts: WeftEngineOptions = {}, register?: (e: WeftEngine) => void): Promise<WeftEngine> {
    const engine = await WeftEngine.create({
      database: { url: this.url, poolSize: 10 },
      schema: 'weft',
      logger: quietLogger(),
      timerPollInterval: 50,
      shutdownGracePeriod: 0,
      ...opts,
    });
    register?.(engine);
    this.engines.push(engine);
    return engine;
  }

  async disposeAll(): Promise<void> {
    const all = this.engines.splice(0);
    await Promise.all(all.map((e) => e.dispose()));
  }
}

/**
 * A test database for this file and an EnginePool on it, created before all tests and dropped
 * after them; engines are disposed after each test unless a file shares one across its tests.
 */
export function useTestEngines({ disposeAfterEach = true } = {}): { tdb: TestDatabase; pool: EnginePool } {
  const env = {} as { tdb: TestDatabase; pool: EnginePool };
  beforeAll(async () => {
    env.tdb = await createTestDatabase();
    env.pool = new EnginePool(env.tdb.url);
  });
  if (disposeAfterEach) afterEach(async () => env.pool.disposeAll());
  afterAll(async () => {
    await env.pool?.disposeAll();
    await env.tdb?.drop();
  });
  return env;
}

/**
 * `promise`, or an error naming `what` once `ms` pass first (the promise itself goes on unheeded).
 * `what` may be a function, asked at the deadline: how far the awaited work got by then.
 */
export async function within<T>(what: string | (() => string), ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms waiting for ${typeof what === 'string' ? what : what()}`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** How long past its wait's deadline one check may take before the wait gives up on it. */
const CHECK_GRACE_MS = 5_000;

/**
 * Polls `check` until it returns a truthy value or the deadline passes. A check that does not
 * answer (a request to a server that hangs) fails the wait too, shortly after its deadline, with
 * `what` in the message: it used to hold the test until vitest's own timeout, which names nothing.
 */
export async function waitFor<T>(check: () => Promise<T> | T, what: string, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = Math.max(0, deadline - Date.now()) + CHECK_GRACE_MS;
    const v = await within(`${what} (its check had not answered)`, left, Promise.resolve().then(check));
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** How a call was refused: its error's `code`, message and the error itself; null when it succeeded. */
export async function codeOf(call: Promise<unknown> | (() => unknown)): Promise<{ code?: string; message: string; err: unknown } | null> {
  try {
    await (typeof call === 'function' ? call() : call);
  } catch (err) {
    return { code: (err as { code?: string }).code, message: (err as Error).message, err };
  }
  return null;
}

/**
 * A workflow type (`Held`) whose one step ('hold') holds until the test calls `release()`: it
 * keeps a queue's slot. `began` turns true once that step runs; a test resets it before starting one.
 */
export function heldWorkflow(): { Held: new () => { run(ctx: WorkflowContext): Promise<void> }; began: boolean; release(): void } {
  const held = {
    began: false,
    release: (): void => undefined,
    Held: class {
      async run(ctx: WorkflowContext) {
        const gate = new Promise<void>((r) => (held.release = r));
        await ctx.step('hold', async () => {
          held.began = true;
          await gate;
        });
      }
    },
  };
  return held;
}
