import type { InboxMessage } from '../storage/types.js';
import type { OperationRecord } from '../common/types.js';
import type { Execution, WaitKind } from './execution.js';
import { describeError } from './error-record.js';
import { toStoredJson } from './validation.js';

export interface UpdateOutcome {
  value?: unknown;
  error?: { name: string; message: string };
}

type Method = (...args: unknown[]) => unknown;

function method(exec: Execution, name: string | undefined): Method | undefined {
  if (!name || !exec.instance) return undefined;
  const fn = (exec.instance as unknown as Record<string, unknown>)[name];
  return typeof fn === 'function' ? (fn as Method).bind(exec.instance) : undefined;
}

/** An `async` method: refused as an update handler (WeftModule refuses it at bootstrap). */
export function isAsyncFunction(fn: unknown): boolean {
  return typeof fn === 'function' && fn.constructor.name === 'AsyncFunction';
}

const mustBeSync = (name: string, why: string) => ({
  name: 'InvalidUpdateHandlerError',
  message: `update handler "${name}" ${why}; update handlers must be synchronous: change state and return a value, and leave async work to run()`,
});

/**
 * Calls an update handler; it must be synchronous so its effect has one place in history.
 * `touched`: it ran and failed (threw, returned a promise, or a result JSON cannot hold), so
 * it may have changed the instance, which the caller was told did not happen.
 */
export function runUpdateHandler(exec: Execution, name: string, args: unknown): { outcome: UpdateOutcome; touched: boolean } {
  const fn = method(exec, exec.definition.updateHandlers?.[name]);
  if (!fn) return { outcome: { error: { name: 'UnknownHandlerError', message: `no update handler "${name}"` } }, touched: false };
  if (isAsyncFunction(fn)) return { outcome: { error: mustBeSync(name, 'is an async method') }, touched: false };
  try {
    const value = fn(args);
    if (value && typeof (value as Promise<unknown>).then === 'function') {
      (value as Promise<unknown>).then(undefined, () => undefined); // its late rejection is not unhandled
      return { outcome: { error: mustBeSync(name, 'returned a promise') }, touched: true };
    }
    return { outcome: { value: toStoredJson(value, `Result of update "${name}"`, exec.host.maxPayloadBytes) }, touched: false };
  } catch (err) {
    const { name: n, message } = describeError(err);
    return { outcome: { error: { name: n, message } }, touched: true };
  }
}

export function runSignalHandler(exec: Execution, name: string, payload: unknown): void {
  method(exec, exec.definition.signalHandlers?.[name])?.(payload);
}

/**
 * Replay: the same handler calls at the same place; update results come from history. A failed
 * update changed nothing (a live one that failed is rolled back by rebuilding the run), so it is
 * not called again.
 */
export function replayDelivery(exec: Execution, rec: OperationRecord): void {
  if (rec.kind === 'signal') runSignalHandler(exec, rec.name, rec.result);
  else if (rec.kind === 'update') {
    const recorded = rec.result as { args?: unknown; error?: unknown } | null;
    if (!recorded?.error) runUpdateHandler(exec, rec.name, recorded?.args);
  }
}

function oldestWait(exec: Execution, kind: WaitKind, name: string): number | undefined {
  let best: number | undefined;
  for (const [seq, w] of exec.waits) if (w.kind === kind && w.name === name && (best === undefined || seq < best)) best = seq;
  return best;
}

/** Delivers one message; false when nothing here can take it yet (it stays buffered). */
function deliver(exec: Execution, m: InboxMessage, onUpdate: (messageId: string) => void): boolean {
  if (m.kind === 'signal' && exec.definition.signalHandlers?.[m.name]) {
    const seq = exec.nextSeq++;
    void exec.record({ seq, kind: 'signal', name: m.name, status: 'completed', result: m.payload }, { consume: [{ id: m.id, seq }] });
    runSignalHandler(exec, m.name, m.payload);
    return true;
  }
  if (m.kind === 'update') {
    const seq = exec.nextSeq++;
    const { outcome: out, touched } = runUpdateHandler(exec, m.name, m.payload);
    const status = out.error ? 'failed' : 'done';
    const result = { args: m.payload, ...out };
    const recorded = exec
      .record({ seq, kind: 'update', name: m.name, status: 'completed', result }, { consume: [{ id: m.id, seq, status, result: out }] })
      .then(() => onUpdate(m.id));
    // The caller is told it failed: what the handler changed must not stay.
    if (touched) exec.host.rebuild(exec, recorded);
    return true;
  }
  const waitKind: WaitKind = m.kind === 'signal' ? 'waitForSignal' : 'childResult';
  const seq = oldestWait(exec, waitKind, m.name);
  if (seq === undefined) return false;
  return exec.resolveWait(seq, m.payload, { consume: [{ id: m.id, seq }] });
}

/**
 * Handlers run while the workflow waits: only when the run is past replay, no step body is
 * running and run() has made its first ctx call (Execution.mayDeliver), or before run() for a
 * start's own messages. Delivers in arrival order, then re-evaluates every pending condition.
 */
export function pumpInbox(exec: Execution, onUpdate: (messageId: string) => void): void {
  if (exec.state !== 'active' || exec.readOnly || exec.isReplaying || exec.inflightSteps > 0 || !exec.mayDeliver) return;
  const kept: InboxMessage[] = [];
  for (const m of exec.inbox) {
    if (exec.state !== 'active' || !deliver(exec, m, onUpdate)) kept.push(m);
  }
  exec.inbox = kept;
  for (const [seq, w] of [...exec.waits]) {
    if (w.kind === 'condition' && exec.state === 'active' && w.pred?.()) exec.resolveWait(seq, true);
  }
}
