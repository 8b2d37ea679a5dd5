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

/** Calls an update handler; it must be synchronous so its effect has one place in history. */
export function runUpdateHandler(exec: Execution, name: string, args: unknown): UpdateOutcome {
  const fn = method(exec, exec.definition.updateHandlers?.[name]);
  if (!fn) return { error: { name: 'UnknownHandlerError', message: `no update handler "${name}"` } };
  try {
    const value = fn(args);
    if (value && typeof (value as Promise<unknown>).then === 'function') {
      return { error: { name: 'InvalidUpdateHandler', message: `update handler "${name}" must be synchronous` } };
    }
    return { value: toStoredJson(value, `Result of update "${name}"`, exec.host.maxPayloadBytes) };
  } catch (err) {
    const { name: n, message } = describeError(err);
    return { error: { name: n, message } };
  }
}

export function runSignalHandler(exec: Execution, name: string, payload: unknown): void {
  method(exec, exec.definition.signalHandlers?.[name])?.(payload);
}

/** Replay: the same handler calls at the same place; update results come from history. */
export function replayDelivery(exec: Execution, rec: OperationRecord): void {
  if (rec.kind === 'signal') runSignalHandler(exec, rec.name, rec.result);
  else if (rec.kind === 'update') runUpdateHandler(exec, rec.name, (rec.result as { args?: unknown } | null)?.args);
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
    const out = runUpdateHandler(exec, m.name, m.payload);
    const status = out.error ? 'failed' : 'done';
    const result = { args: m.payload, ...out };
    void exec
      .record({ seq, kind: 'update', name: m.name, status: 'completed', result }, { consume: [{ id: m.id, seq, status, result: out }] })
      .then(() => onUpdate(m.id));
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
