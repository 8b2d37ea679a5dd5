import type { OperationRecord } from '../common/types.js';

/** What a matcher returns to vitest's or jest's expect.extend. */
interface MatcherResult {
  pass: boolean;
  message: () => string;
}

function historyOf(received: unknown): OperationRecord[] {
  const h = Array.isArray(received) ? received : (received as { history?: unknown } | null)?.history;
  if (!Array.isArray(h)) throw new TypeError('expected a history (env.history(id)) or a description (env.describe(id))');
  return h as OperationRecord[];
}

const shown = (h: OperationRecord[]) => h.map((o) => `${o.seq} ${o.kind} ${o.name} ${o.status}`).join('\n  ') || '(empty)';

function matcher(
  what: string,
  test: (op: OperationRecord, name: string) => boolean,
): (this: { isNot?: boolean }, received: unknown, name: string) => MatcherResult {
  return function (received, name) {
    const h = historyOf(received);
    const pass = h.some((op) => test(op, name));
    return {
      pass,
      message: () => `expected the history ${pass ? 'not ' : ''}to have ${what} "${name}"; it has:\n  ${shown(h)}`,
    };
  };
}

/**
 * Matchers over a workflow's history (`env.history(id)` or `env.describe(id)`), for vitest's and
 * jest's `expect.extend(weftMatchers)` (docs/testing.md#matchers).
 */
export const weftMatchers = {
  toHaveCompletedStep: matcher('completed step', (op, name) => op.kind === 'step' && op.name === name && op.status === 'completed'),
  toHaveFailedStep: matcher('failed step', (op, name) => op.kind === 'step' && op.name === name && op.status === 'failed'),
  toHaveReceivedSignal: matcher(
    'received signal',
    (op, name) =>
      op.name === name && ((op.kind === 'signal' && op.status === 'completed') || (op.kind === 'waitForSignal' && op.result != null)),
  ),
};

/** The matchers' types, for `declare module 'vitest' { interface Assertion<T> extends WeftMatchers<T> {} }`. */
export interface WeftMatchers<R = unknown> {
  toHaveCompletedStep(name: string): R;
  toHaveFailedStep(name: string): R;
  toHaveReceivedSignal(name: string): R;
}
