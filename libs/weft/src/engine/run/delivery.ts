import type { InboxMessage } from '../../storage/types.js';
import type { OperationRecord } from '../../common/types.js';
import type { Execution } from './execution.js';
import { waitKindFor, type WaitKind } from '../../common/operation-kinds.js';
import { describeError } from '../error-record.js';
import { assertJsonSerializable, toStoredJson } from '../validation.js';
import { WorkflowStatus } from '../../common/types.js';

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
  if (rec.kind === 'cancelRequested') exec.cancelReplayed(rec);
  else if (rec.kind === 'signal') runSignalHandler(exec, rec.name, rec.result);
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

/** Messages that passed unrecordable: one buffered until its waiter comes is not walked at every pump. */
const checked = new WeakSet<InboxMessage>();

/**
 * Why a stored message's payload could never be recorded (the check a payload now gets when it
 * is offered, which an older version or a hand-written row did not pass), or null.
 */
function unrecordable(m: InboxMessage): { name: string; message: string } | null {
  if (checked.has(m)) return null;
  try {
    assertJsonSerializable(m.payload, `Payload of ${m.kind} message ${m.id} "${m.name}"`);
    checked.add(m);
    return null;
  } catch (err) {
    return { name: (err as Error).name, message: (err as Error).message };
  }
}

/**
 * A signal or update request that can never be applied is consumed as refused, with the reason
 * on its row (an update's caller gets it as UpdateFailedError), so it cannot stall the workflow;
 * a child's notice becomes the child's failure, so the parent's wait ends (docs/messages.md).
 */
function refuse(exec: Execution, m: InboxMessage, error: { name: string; message: string }): InboxMessage | null {
  const outcome = m.kind === 'child' ? "it is delivered as the child's failure" : 'it is marked refused';
  exec.host.logger.warn(`Workflow "${exec.workflowId}" cannot take in a stored message (${error.message}); ${outcome}.`);
  if (m.kind === 'child') return { ...m, payload: { status: WorkflowStatus.Failed, output: null, error } };
  void exec.commit({ consume: [{ id: m.id, seq: null, status: 'refused', result: { error } }] });
  return null;
}

/** The message to deliver: as stored, or what refuse() made of one no commit could hold (null: consumed). */
function admit(exec: Execution, stored: InboxMessage): InboxMessage | null {
  const problem = unrecordable(stored);
  return problem ? refuse(exec, stored, problem) : stored;
}

/** Delivers one message; false when nothing here can take it yet (it stays buffered). */
function deliver(exec: Execution, m: InboxMessage, onUpdate: (messageId: string) => void): boolean {
  if (m.kind === 'signal' && exec.definition.signalHandlers?.[m.name]) {
    const seq = exec.takeSeq(false);
    void exec.record({ seq, kind: 'signal', name: m.name, status: 'completed', result: m.payload }, { consume: [{ id: m.id, seq }] });
    runSignalHandler(exec, m.name, m.payload);
    return true;
  }
  if (m.kind === 'update') {
    const seq = exec.takeSeq(false);
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
  const waitKind = waitKindFor(m.kind);
  const seq = waitKind && oldestWait(exec, waitKind, m.name);
  if (seq === undefined) return false;
  return exec.resolveWait(seq, m.payload, { consume: [{ id: m.id, seq }] });
}

/**
 * Delivers the inbox in arrival order while the run stays active; returns what stays buffered.
 * It stops after a message that ended a wait: the code then goes on to its next call before the
 * rest is applied, as a replay runs it (ReplayDriver lets the code run to its next wait after each
 * release). Applied at once, a signal later in the batch would take the seq the code takes on replay.
 */
function deliverAll(exec: Execution, onUpdate: (messageId: string) => void): { kept: InboxMessage[]; resumed: boolean } {
  const kept: InboxMessage[] = [];
  const messages = exec.inbox.messages;
  for (let i = 0; i < messages.length; i++) {
    const stored = messages[i];
    const m = exec.state === 'active' ? admit(exec, stored) : stored;
    if (!m) continue;
    if (exec.state !== 'active' || !deliver(exec, m, onUpdate)) {
      kept.push(m);
      continue;
    }
    if (m.kind !== 'update' && !(m.kind === 'signal' && exec.definition.signalHandlers?.[m.name])) {
      kept.push(...messages.slice(i + 1));
      return { kept, resumed: i + 1 < messages.length };
    }
  }
  return { kept, resumed: false };
}

/**
 * Handlers run while the workflow waits: only when the run is past replay, no step body is
 * running and run() has made its first ctx call (Execution.mayDeliver), or before run() for a
 * start's own messages. Delivers in arrival order, then re-evaluates every pending condition.
 */
export function pumpInbox(exec: Execution, onUpdate: (messageId: string) => void): void {
  if (exec.state !== 'active' || exec.readOnly || exec.isReplaying || !exec.mayDeliver) return;
  // A cancel reaches the run while its step bodies run too: it aborts them (docs/cancellation.md).
  if (exec.inbox.hasCancel) exec.scheduleCancel();
  if (exec.inflightSteps > 0) return;
  // Woken while its queue slot was released: nothing more runs until it holds one (Execution.slotTaken).
  if (exec.slot === 'wanted') return;
  const { kept, resumed } = deliverAll(exec, onUpdate);
  exec.inbox.keep(kept);
  for (const [seq, w] of [...exec.waits]) {
    if (w.kind === 'condition' && exec.state === 'active' && w.pred?.()) exec.resolveWait(seq, true);
  }
  // The rest of the batch once the code has run to its next wait (a wait it makes pumps too).
  if (resumed) setImmediate(() => exec.host.pump(exec));
}
