import { WeftEngine } from '../../libs/weft/src/engine/engine';
import type { WeftEngineOptions } from '../../libs/weft/src/engine/options';
import type { WeftLogger } from '../../libs/weft/src/engine/types';

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
