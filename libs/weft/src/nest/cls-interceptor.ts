// nestjs-cls context carried into workflows and steps (docs/interceptors.md#nestjs-cls). nestjs-cls
// is an optional peer: it is imported on the first hook call of an app that configured this
// interceptor, never at load; absent, every hook just calls `next`.
import type { Type } from '@nestjs/common';
import type { RunInput, StartInput, StepInput, WeftHeaders, WeftInterceptor } from '../common/interceptors.js';

/** What is used of nestjs-cls's ClsService. */
interface Cls {
  isActive(): boolean;
  get(key: string | symbol): unknown;
  set(key: string | symbol, value: unknown): void;
  run<T>(options: { ifNested: 'override' }, fn: () => T): T;
}

/** The header of the CLS id (nestjs-cls's request id); `cls.<key>` carries each key, as JSON. */
export const CLS_ID_HEADER = 'cls:id';
const KEY_PREFIX = 'cls.';

type Loaded = { cls: Cls; id: symbol } | null;
let loading: Promise<Loaded> | undefined;

/** nestjs-cls's global ClsService and CLS_ID, or null when it is not installed. */
function loadCls(): Promise<Loaded> {
  loading ??= (import('nestjs-cls' as string) as Promise<Record<string, unknown>>).then(
    (lib) => {
      const manager = lib.ClsServiceManager as { getClsService(): Cls } | undefined;
      return manager && typeof lib.CLS_ID === 'symbol' ? { cls: manager.getClsService(), id: lib.CLS_ID } : null;
    },
    () => null,
  );
  return loading;
}

/**
 * Captures the CLS id (`cls.getId()`) and the CLS keys it carries at a start, into the workflow's
 * headers, and restores them in a CLS context of their own around the workflow's run() and each
 * step attempt, on whichever engine runs it (after a takeover too). That context is a new one
 * (`ifNested: 'override'`): a run or step never sees the CLS of the code that happened to launch
 * it (the starter's request, another workflow's step body), only what its start captured.
 *
 * `WeftClsInterceptor` carries the id only; `WeftClsInterceptor.carrying('tenantId', ...)` gives a
 * class that carries these keys too (each value as JSON: keep them small; headers are bounded).
 */
export class WeftClsInterceptor implements WeftInterceptor {
  /** The CLS keys carried besides the id. */
  protected readonly keys: readonly string[] = [];

  /** An interceptor class that carries `keys` (and the id); give it to `interceptors`. */
  static carrying(...keys: string[]): Type<WeftClsInterceptor> {
    const carried = Object.freeze([...keys]);
    return class WeftClsInterceptorCarrying extends WeftClsInterceptor {
      protected override readonly keys = carried;
    };
  }

  async start(input: StartInput, next: (input: StartInput) => Promise<string>): Promise<string> {
    const loaded = await loadCls();
    if (!loaded?.cls.isActive()) return next(input);
    const { cls, id } = loaded;
    const headers: Record<string, string> = { ...input.headers };
    const clsId = cls.get(id);
    if (typeof clsId === 'string') headers[CLS_ID_HEADER] = clsId;
    for (const key of this.keys) {
      const value = cls.get(key);
      if (value !== undefined) headers[KEY_PREFIX + key] = JSON.stringify(value);
    }
    return next({ ...input, headers });
  }

  run(input: RunInput, next: (input: RunInput) => Promise<unknown>): Promise<unknown> {
    return this.restored(input.headers, () => next(input));
  }

  step(input: StepInput, next: (input: StepInput) => Promise<unknown>): Promise<unknown> {
    return this.restored(input.headers, () => next(input));
  }

  private async restored<T>(headers: WeftHeaders, fn: () => Promise<T>): Promise<T> {
    const loaded = await loadCls();
    if (!loaded) return fn();
    const { cls, id } = loaded;
    return cls.run({ ifNested: 'override' }, () => {
      if (headers[CLS_ID_HEADER] !== undefined) cls.set(id, headers[CLS_ID_HEADER]);
      for (const key of this.keys) {
        const raw = headers[KEY_PREFIX + key];
        if (raw !== undefined) cls.set(key, JSON.parse(raw) as unknown);
      }
      return fn();
    });
  }
}
