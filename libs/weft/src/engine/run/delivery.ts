import type { InboxMessage } from '../../storage/types.js';
import type { OperationRecord, WorkflowFailure } from '../../common/types.js';
import { ContinueAsNewStop, NonDeterminismStop } from './context.js';
import type { Execution } from './execution.js';
import { waitKindFor, type WaitKind } from '../../common/operation-kinds.js';
import { describeError } from '../error-record.js';
import { assertJsonSerializable, toStoredJson } from '../validation.js';
import { WorkflowStatus } from '../../common/types.js';

export interface UpdateOutcome {
  value?: unknown;
  /** As describeError records it (an async handler's keeps its code, details and cause). */
  error?: { name: string; message: string; [field: string]: unknown };
}

type Method = (...args: unknown[]) => unknown;

function method(exec: Execution, name: string | undefined): Method | undefined {
  if (!name || !exec.instance) return undefined;
  const fn = (exec.instance as unknown as Record<string, unknown>)[name];
  return typeof fn === 'function' ? (fn as Method).bind(exec.instance) : undefined;
}

/** An `async` method. */
export function isAsyncFunction(fn: unknown): boolean {
  return typeof fn === 'function' && fn.constructor.name === 'AsyncFunction';
}

const isThenable = (v: unknown): v is PromiseLike<unknown> => !!v && typeof (v as PromiseLike<unknown>).then === 'function';

/** What the code throws to unwind a run that was stopped or continued: not an update's failure. */
const isRunStop = (err: unknown) => err instanceof NonDeterminismStop || err instanceof ContinueAsNewStop;

/**
 * The update's validator (DESIGN 9.3): a method name or a function, called on the instance with
 * the arguments before anything is recorded. Returns why it refused, or null. It must decide
 * synchronously, from the state and the arguments; ctx calls in it are refused.
 */
export function validateUpdate(exec: Execution, name: string, args: unknown): WorkflowFailure | null {
  const v = exec.definition.updateValidators?.[name];
  if (v === undefined || !exec.instance) return null;
  const fn = typeof v === 'function' ? v : (exec.instance as unknown as Record<string, unknown>)[v];
  if (typeof fn !== 'function') return { name: 'InvalidUpdateValidatorError', message: `update validator of "${name}" is not a method` };
  try {
    const out = exec.validate(() => (fn as Method).call(exec.instance, args));
    if (isThenable(out)) {
      out.then(undefined, () => undefined);
      return {
        name: 'InvalidUpdateValidatorError',
        message: `update validator of "${name}" returned a promise; validators are synchronous`,
      };
    }
    return null;
  } catch (err) {
    return describeError(err);
  }
}

/** A handler that returned: its value as stored, or why it cannot be. */
function settledOutcome(exec: Execution, name: string, value: unknown): UpdateOutcome {
  try {
    return { value: toStoredJson(value, `Result of update "${name}"`, exec.host.maxPayloadBytes) };
  } catch (err) {
    const { name: n, message } = describeError(err);
    return { error: { name: n, message } };
  }
}

/**
 * Calls a synchronous update handler. `touched`: it ran and failed (threw, or returned a result
 * JSON cannot hold), so it may have changed the instance, which the caller was told did not
 * happen. `pending`: it returned a promise (a handler that is not declared async): followed as an
 * async one's.
 */
export function runUpdateHandler(
  exec: Execution,
  name: string,
  args: unknown,
): { outcome: UpdateOutcome; touched: boolean } | { pending: PromiseLike<unknown> } {
  const fn = method(exec, exec.definition.updateHandlers?.[name]);
  if (!fn) return { outcome: { error: { name: 'UnknownHandlerError', message: `no update handler "${name}"` } }, touched: false };
  try {
    const value = exec.withCode(() => fn(args));
    if (isThenable(value)) return { pending: value };
    const outcome = settledOutcome(exec, name, value);
    return { outcome, touched: outcome.error !== undefined };
  } catch (err) {
    const { name: n, message } = describeError(err);
    return { outcome: { error: { name: n, message } }, touched: true };
  }
}

/**
 * An async handler's end: its outcome goes on its request row (status `done` or `failed`) with
 * the run's next commit, and local callers are woken once it is durable. A replayed handler that
 * had finished before writes nothing (only an `accepted` row changes). Its failure stays a
 * failure of the update: what it did before is kept, as in Temporal (docs/messages.md).
 */
function followUpdate(
  exec: Execution,
  messageId: string,
  name: string,
  pending: PromiseLike<unknown>,
  onUpdate: (id: string) => void,
): void {
  exec.updateOpened(messageId, name);
  const done = (outcome: UpdateOutcome) => {
    if (exec.readOnly || exec.state !== 'active' || !exec.updateClosed(messageId)) return;
    const status = outcome.error ? ('failed' as const) : ('done' as const);
    void exec.commit({ updateResults: [{ id: messageId, status, result: outcome }] }).then(() => onUpdate(messageId));
  };
  pending.then(
    (value) => done(settledOutcome(exec, name, value)),
    (err: unknown) => {
      if (!isRunStop(err)) done({ error: describeError(err) });
    },
  );
}

export function runSignalHandler(exec: Execution, name: string, payload: unknown): void {
  const fn = method(exec, exec.definition.signalHandlers?.[name]);
  if (fn) exec.withCode(() => fn(payload));
}

/** What an update's history record holds: its arguments, and the outcome of a synchronous handler. */
interface RecordedUpdate {
  args?: unknown;
  error?: unknown;
  /** An async handler: its request, whose row gets the outcome when it finishes. */
  messageId?: string;
}

/**
 * Replay: the same handler calls at the same place; update results come from history. A failed
 * synchronous update changed nothing (a live one that failed is rolled back by rebuilding the
 * run), so it is not called again. An async handler runs again from its start, its ctx calls
 * replayed from history, and goes on live where the history ends.
 */
export function replayDelivery(exec: Execution, rec: OperationRecord, onUpdate: (messageId: string) => void = () => undefined): void {
  if (rec.kind === 'cancelRequested') exec.cancelReplayed(rec);
  else if (rec.kind === 'signal') runSignalHandler(exec, rec.name, rec.result);
  else if (rec.kind === 'update') {
    const recorded = rec.result as RecordedUpdate | null;
    if (recorded?.error) return;
    const ran = runUpdateHandler(exec, rec.name, recorded?.args);
    if ('pending' in ran) {
      if (recorded?.messageId) followUpdate(exec, recorded.messageId, rec.name, ran.pending, onUpdate);
      else ran.pending.then(undefined, () => undefined);
    }
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

/** Validates, records and runs an update (see docs/messages.md, "Updates"); always taken. */
function deliverUpdate(exec: Execution, m: InboxMessage, onUpdate: (messageId: string) => void): boolean {
  // A rejected request leaves no history: its row only carries the refusal to its caller.
  const rejected = validateUpdate(exec, m.name, m.payload);
  if (rejected) {
    void exec.commit({ consume: [{ id: m.id, seq: null, status: 'rejected', result: { error: rejected } }] }).then(() => onUpdate(m.id));
    return true;
  }
  const seq = exec.takeSeq(false);
  const declaredAsync = isAsyncFunction(
    (exec.instance as unknown as Record<string, unknown>)[exec.definition.updateHandlers?.[m.name] ?? ''],
  );
  if (declaredAsync) {
    // Recorded before the handler runs: its first step's body waits for this record (durable()).
    const result: RecordedUpdate = { args: m.payload, messageId: m.id };
    void exec.record(
      { seq, kind: 'update', name: m.name, status: 'completed', result },
      { consume: [{ id: m.id, seq, status: 'accepted' }] },
    );
    const ran = runUpdateHandler(exec, m.name, m.payload);
    const pending =
      'pending' in ran ? ran.pending : Promise.resolve(ran.outcome.error ? Promise.reject(ran.outcome.error) : ran.outcome.value);
    followUpdate(exec, m.id, m.name, pending, onUpdate);
    return true;
  }
  // Its event is taken before the handler runs: what the handler records comes after it, as in replay.
  const event = exec.takeEvent();
  const ran = runUpdateHandler(exec, m.name, m.payload);
  if ('pending' in ran) {
    const result: RecordedUpdate = { args: m.payload, messageId: m.id };
    void exec.record(
      { seq, kind: 'update', name: m.name, status: 'completed', result },
      { consume: [{ id: m.id, seq, status: 'accepted' }] },
      event,
    );
    followUpdate(exec, m.id, m.name, ran.pending, onUpdate);
    return true;
  }
  const { outcome: out, touched } = ran;
  const status = out.error ? 'failed' : 'done';
  const result = { args: m.payload, ...out };
  const recorded = exec
    .record(
      { seq, kind: 'update', name: m.name, status: 'completed', result },
      { consume: [{ id: m.id, seq, status, result: out }] },
      event,
    )
    .then(() => onUpdate(m.id));
  // The caller is told it failed: what the handler changed must not stay.
  if (touched) exec.host.rebuild(exec, recorded);
  return true;
}

/** Delivers one message; false when nothing here can take it yet (it stays buffered). */
function deliver(exec: Execution, m: InboxMessage, onUpdate: (messageId: string) => void): boolean {
  if (m.kind === 'signal' && exec.definition.signalHandlers?.[m.name]) {
    const seq = exec.takeSeq(false);
    void exec.record({ seq, kind: 'signal', name: m.name, status: 'completed', result: m.payload }, { consume: [{ id: m.id, seq }] });
    runSignalHandler(exec, m.name, m.payload);
    return true;
  }
  if (m.kind === 'update') return deliverUpdate(exec, m, onUpdate);
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
    // An update waits for run() to set its state up (its first wait), even a start's own
    // (updateWithStart): a handler may await ctx operations, which belong after run()'s first ones.
    if (stored.kind === 'update' && !exec.codeBegun) {
      kept.push(stored);
      continue;
    }
    const m = exec.state === 'active' ? admit(exec, stored) : stored;
    if (!m) continue;
    if (exec.state !== 'active' || !deliver(exec, m, onUpdate)) {
      kept.push(m);
      continue;
    }
    // An update's handler may go on past its first await: the rest of the batch once it has run to
    // its next ctx call, as the replay driver lets it between two deliveries.
    if (m.kind === 'update' || !(m.kind === 'signal' && exec.definition.signalHandlers?.[m.name])) {
      kept.push(...messages.slice(i + 1));
      return { kept, resumed: i + 1 < messages.length };
    }
  }
  return { kept, resumed: false };
}

/** Runs in a pump now, and those that asked for another from inside it. */
const pumping = new WeakSet<Execution>();
const pumpAgain = new WeakSet<Execution>();

/** Whether handlers may run now. A pending cancel is scheduled even while step bodies run: it aborts them. */
function readyToDeliver(exec: Execution): boolean {
  if (exec.state !== 'active' || exec.readOnly || exec.isReplaying || !exec.mayDeliver) return false;
  if (exec.inbox.hasCancel) exec.scheduleCancel(); // docs/cancellation.md
  // Woken while its queue slot was released: nothing more runs until it holds one (Execution.slotTaken).
  return exec.inflightSteps === 0 && exec.slot !== 'wanted';
}

/**
 * Handlers run while the workflow waits: only when the run is past replay, no step body is
 * running and run() has made its first ctx call (Execution.mayDeliver), or before run() for a
 * start's own messages. Delivers in arrival order, then re-evaluates every pending condition.
 */
export function pumpInbox(exec: Execution, onUpdate: (messageId: string) => void): void {
  if (!readyToDeliver(exec)) return;
  // A handler that waits at once (an async update's condition) asks for a pump from inside this
  // one: it comes after, or it would deliver the same buffered messages again.
  if (pumping.has(exec)) return void pumpAgain.add(exec);
  pumping.add(exec);
  let kept: InboxMessage[];
  let resumed: boolean;
  try {
    ({ kept, resumed } = deliverAll(exec, onUpdate));
  } finally {
    pumping.delete(exec);
  }
  exec.inbox.keep(kept);
  if (pumpAgain.delete(exec)) resumed = true;
  for (const [seq, w] of [...exec.waits]) {
    if (w.kind === 'condition' && exec.state === 'active' && w.pred?.()) exec.resolveWait(seq, true);
  }
  // The rest of the batch once the code has run to its next wait (a wait it makes pumps too).
  if (resumed) setImmediate(() => exec.host.pump(exec));
}
