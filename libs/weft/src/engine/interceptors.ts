// The engine's interceptors (docs/interceptors.md, docs/decisions/0039): each hook kind composed
// once, at engine creation, into one chain; a kind no interceptor has is `undefined`, so its call
// site keeps its plain path (no closure, no await) when none is configured.
import { InterceptorFailedError, InvalidArgumentError, InvalidConfigurationError, WeftError } from '../common/errors.js';
import type { RunInput, SignalInput, StartInput, StepInput, WeftHeaders, WeftInterceptor } from '../common/interceptors.js';
import { unstorableText } from './validation.js';

type HookName = 'start' | 'run' | 'step' | 'signal';
type Hook<I, O> = (input: I, next: (input: I) => Promise<O>) => Promise<O>;
/** A composed chain: the hooks in order, then `terminal`. */
export type Chain<I, O> = (input: I, terminal: (input: I) => Promise<O>) => Promise<O>;

const HOOKS: readonly HookName[] = ['start', 'run', 'step', 'signal'];

/** Bounds of a workflow's headers, checked before the start writes anything. */
export const MAX_HEADERS = 32;
export const MAX_HEADER_NAME = 128;
/** All names and values together, in characters. */
export const MAX_HEADERS_SIZE = 8 * 1024;

/** The frozen empty headers: what run and step hooks see for a workflow started without any. */
export const NO_HEADERS: WeftHeaders = Object.freeze({});

function nameOf(i: WeftInterceptor, index: number): string {
  const n = (i as object).constructor?.name;
  return n && n !== 'Object' ? n : `#${index}`;
}

/** Composes `hooks` (the first outermost). Errors of `next` pass through unchanged; a hook's own throw is an InterceptorFailedError. */
function compose<I, O>(kind: HookName, hooks: Array<{ name: string; fn: Hook<I, O> }>): Chain<I, O> | undefined {
  if (hooks.length === 0) return undefined;
  return (input, terminal) => {
    const call = (at: number, x: I): Promise<O> => {
      if (at === hooks.length) return terminal(x);
      const { name, fn } = hooks[at];
      const passed = new Set<unknown>();
      const next = (y: I) =>
        call(at + 1, y).catch((err: unknown) => {
          passed.add(err);
          throw err;
        });
      const wrap = (err: unknown): never => {
        if (passed.has(err) || err instanceof WeftError) throw err;
        throw new InterceptorFailedError(kind, name, { cause: err });
      };
      try {
        return Promise.resolve(fn(x, next)).catch(wrap);
      } catch (err) {
        return Promise.reject(err).catch(wrap);
      }
    };
    return call(0, input);
  };
}

/** The engine's hook chains; a kind no interceptor has is undefined. */
export class EngineInterceptors {
  readonly start: Chain<StartInput, string> | undefined;
  readonly run: Chain<RunInput, unknown> | undefined;
  readonly step: Chain<StepInput, unknown> | undefined;
  readonly signal: Chain<SignalInput, void> | undefined;

  private constructor(list: readonly WeftInterceptor[]) {
    const of = <I, O>(kind: HookName) =>
      compose<I, O>(
        kind,
        list.flatMap((i, index) => {
          const fn = i[kind] as Hook<I, O> | undefined;
          return fn ? [{ name: nameOf(i, index), fn: fn.bind(i) as Hook<I, O> }] : [];
        }),
      );
    this.start = of('start');
    this.run = of('run');
    this.step = of('step');
    this.signal = of('signal');
  }

  /** The `interceptors` option, checked; null when there are none (the engine then takes no hook path). */
  static from(option: unknown): EngineInterceptors | null {
    if (option === undefined) return null;
    if (!Array.isArray(option)) throw new InvalidConfigurationError('interceptors', 'must be an array of interceptor objects');
    option.forEach((i: unknown, index) => {
      if (typeof i !== 'object' || i === null)
        throw new InvalidConfigurationError(`interceptors[${index}]`, 'must be an object with start, run, step or signal methods');
      const rec = i as Record<string, unknown>;
      const bad = HOOKS.find((h) => rec[h] !== undefined && typeof rec[h] !== 'function');
      if (bad) throw new InvalidConfigurationError(`interceptors[${index}].${bad}`, 'must be a function (input, next) => next(input)');
      if (!HOOKS.some((h) => typeof rec[h] === 'function'))
        throw new InvalidConfigurationError(`interceptors[${index}]`, `has none of the hooks ${HOOKS.join(', ')}`);
    });
    return option.length ? new EngineInterceptors(option as WeftInterceptor[]) : null;
  }
}

/** One header checked; its size in characters. */
function checkedHeader(k: string, v: unknown): number {
  if (k.length === 0 || k.length > MAX_HEADER_NAME)
    throw new InvalidArgumentError('headers', `a name must be 1 to ${MAX_HEADER_NAME} characters (got ${k.length})`);
  if (typeof v !== 'string') throw new InvalidArgumentError(`headers.${k}`, `must be a string (got ${v === null ? 'null' : typeof v})`);
  const unstorable = unstorableText(k) ?? unstorableText(v);
  if (unstorable) throw new InvalidArgumentError(`headers.${k}`, `must not contain ${unstorable}`);
  return k.length + v.length;
}

/**
 * The headers a start stores, checked (a plain object of at most MAX_HEADERS string values, names
 * of 1 to MAX_HEADER_NAME characters, MAX_HEADERS_SIZE characters in all, nothing PostgreSQL cannot
 * store); null when empty.
 */
export function checkedHeaders(headers: unknown): Record<string, string> | null {
  if (headers === undefined || headers === null) return null;
  if (typeof headers !== 'object' || Array.isArray(headers) || Object.getPrototypeOf(headers) !== Object.prototype)
    throw new InvalidArgumentError('headers', 'must be a plain object of strings');
  const entries = Object.entries(headers as Record<string, unknown>);
  if (entries.length === 0) return null;
  if (entries.length > MAX_HEADERS)
    throw new InvalidArgumentError('headers', `must have at most ${MAX_HEADERS} entries (got ${entries.length})`);
  const size = entries.reduce((n, [k, v]) => n + checkedHeader(k, v), 0);
  if (size > MAX_HEADERS_SIZE)
    throw new InvalidArgumentError('headers', `must be at most ${MAX_HEADERS_SIZE} characters in all, names and values (got ${size})`);
  return Object.fromEntries(entries) as Record<string, string>;
}

/** A step body (or a transactional one, `args` unused) run inside the step chain (`body` itself without one); the hooks see the attempt and the workflow's headers. */
export function hookedStep<A extends { attempt: number }>(
  interceptors: EngineInterceptors | null | undefined,
  run: { workflowId: string; runNumber: number; headers: WeftHeaders; definition: { name: string } },
  stepName: string,
  body: (args: A) => unknown,
): (args: A) => unknown {
  const chain = interceptors?.step;
  if (!chain) return body; // no step hooks: the body as given, no closure
  const base = { workflowType: run.definition.name, workflowId: run.workflowId, runNumber: run.runNumber, stepName, headers: run.headers };
  return (args) => chain({ ...base, attempt: args.attempt }, () => new Promise((resolve) => resolve(body(args))));
}
