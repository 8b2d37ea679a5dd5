import { WeftEngine } from '../../libs/weft/src/engine/engine.js';
import type { WeftEngineOptions } from '../../libs/weft/src/engine/options.js';
import type { WeftLogger } from '../../libs/weft/src/common/types.js';
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

/** Polls `check` until it returns a truthy value or the deadline passes. */
export async function waitFor<T>(check: () => Promise<T> | T, what: string, timeoutMs = 10_000, everyMs = 20): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
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
