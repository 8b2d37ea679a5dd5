// The ctx calls on other workflows on the runtime side: children (startChild, executeChild and a
// child's result) and the calls recorded like a step (signalWorkflow, cancelWorkflow, startWorkflow).
import { ChildWorkflowFailedError, recordedError, WorkflowNotFoundError, WorkflowNotRunningError } from '../../../common/errors.js';
import type { ChildHandle, OperationRecord } from '../../../common/types.js';
import { TERMINAL_STATUSES, WorkflowStatus } from '../../../common/types.js';
import { describeError } from '../../error-record.js';
import { toStoredJson, validateName, validateWorkflowId } from '../../validation.js';
import type { Change } from '../commit-queue.js';
import { NEVER } from '../execution.js';
import { CallGate, fromRecord } from './call-gate.js';
import { waitLive } from './waits.js';

interface ChildOutcome {
  status: string;
  output?: unknown;
  error?: { name?: string; message?: string } | null;
}

/** Starts a child workflow; its completion reaches this workflow as a durable message. */
export async function startChild<O = unknown>(
  gate: CallGate,
  type: string,
  input: unknown,
  opts: { workflowId?: string },
): Promise<ChildHandle<O>> {
  gate.active('startChild');
  gate.refuseIfCancelled();
  validateName('child workflow type', type);
  if (opts.workflowId !== undefined) validateWorkflowId(opts.workflowId);
  const { seq, replay, live } = gate.begin('startChild', type);
  const handle = (workflowId: string): ChildHandle<O> => ({ workflowId, result: () => childResult<O>(gate, workflowId) });
  if (replay) return replay.then((r) => handle((r as { workflowId: string }).workflowId));
  if (!live) return NEVER;
  const exec = gate.exec;
  await exec.durable();
  if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
  const start = () => exec.host.startChild(exec, seq, type, input, opts);
  const childId = await (exec.trace ? exec.trace.within(start) : start()); // the child's span nests under this run's
  void exec.record({ seq, kind: 'startChild', name: type, status: 'completed', result: { workflowId: childId } });
  // As a step's: only a run still replaying waits (a live start takes no extra turn).
  const replayed = exec.afterReplay();
  if (replayed) await replayed;
  return handle(childId);
}

/** startChild, then wait for its result. */
export async function executeChild<O = unknown>(gate: CallGate, type: string, input: unknown, opts: { workflowId?: string }): Promise<O> {
  return (await startChild<O>(gate, type, input, opts)).result();
}

function childResult<O>(gate: CallGate, childId: string): Promise<O> {
  return gate.guarded((cancellable) => runChildResult<O>(gate, childId, cancellable));
}

async function runChildResult<O>(gate: CallGate, childId: string, cancellable: boolean): Promise<O> {
  const { seq, replay, live } = gate.begin('childResult', childId);
  const waits = live && !(cancellable && gate.exec.cancelAhead);
  const wait = { kind: 'childResult' as const, name: childId, shielded: !cancellable };
  const outcome = (replay ?? (waits ? waitLive(gate, seq, wait) : NEVER)) as Promise<ChildOutcome>;
  const r = await outcome;
  if (r.status === WorkflowStatus.Completed) return r.output as O;
  throw new ChildWorkflowFailedError(childId, r.status, r.error ? recordedError(r.error) : undefined);
}

/**
 * Signals another workflow (or this one): recorded once, like a step, and the signal is stored in
 * the very commit that records the call, so it is delivered exactly once across a restart or a
 * takeover of this run. A target that does not exist or has ended is a recorded failure (thrown
 * as StepFailedError, its cause the typed error); one that ends between the check and the commit
 * does not get it, as with engine.signal (docs/events-and-streams.md).
 */
export async function signalWorkflow(gate: CallGate, workflowId: string, name: string, payload?: unknown): Promise<void> {
  gate.active('signalWorkflow');
  validateWorkflowId(workflowId);
  validateName('signal name', name);
  const exec = gate.exec;
  const stored = toStoredJson(payload ?? null, `Payload of signal "${name}"`, exec.host.maxPayloadBytes);
  await external(gate, 'signalWorkflow', `${workflowId}:${name}`, async () => {
    const status = await exec.host.external.status(workflowId);
    if (status === null) throw new WorkflowNotFoundError(workflowId);
    if (TERMINAL_STATUSES.includes(status as WorkflowStatus)) throw new WorkflowNotRunningError(workflowId, status);
    return { value: null, change: { sends: [{ workflowId, name, payload: stored }] } };
  });
}

/**
 * Cancels another workflow, recorded once like a step. Cancelling is idempotent, so a call run
 * again after a crash before its record finds it cancelled and does nothing more: the cancel
 * takes effect once. A target that already ended is left as it is.
 */
export async function cancelWorkflow(gate: CallGate, workflowId: string): Promise<void> {
  gate.active('cancelWorkflow');
  validateWorkflowId(workflowId);
  const exec = gate.exec;
  const reason = `Cancelled by workflow "${exec.workflowId}"`;
  await external(gate, 'cancelWorkflow', workflowId, async () => {
    await exec.host.external.cancel(workflowId, reason);
    return { value: null };
  });
}

/**
 * Starts a workflow that is not a child (it outlives this one; no parent-close policy), recorded
 * once like a step. Its id, when not given, is derived from this run and call, and the start is
 * 'return-existing', so a call run again after a crash finds the workflow it started.
 */
export async function startWorkflow(
  gate: CallGate,
  type: string,
  input: unknown,
  opts: { workflowId?: string },
): Promise<{ workflowId: string }> {
  gate.active('startWorkflow');
  validateName('workflow type', type);
  if (opts.workflowId !== undefined) validateWorkflowId(opts.workflowId);
  const exec = gate.exec;
  const stored = toStoredJson(input, `Input of workflow "${type}"`, exec.host.maxPayloadBytes);
  return (await external(gate, 'startWorkflow', type, async (seq) => {
    const id = opts.workflowId ?? `${exec.workflowId}${exec.runNumber > 1 ? `#${exec.runNumber}` : ''}~${seq}`;
    const headers = Object.keys(exec.headers).length ? exec.headers : null; // inherited, like a child's
    return { value: { workflowId: await exec.host.external.start(type, stored, id, headers) } };
  })) as { workflowId: string };
}

/** A call on another workflow, recorded like a step's result (replayed in order, never run again once recorded). */
async function external(
  gate: CallGate,
  kind: 'signalWorkflow' | 'cancelWorkflow' | 'startWorkflow',
  name: string,
  act: (seq: number) => Promise<{ value: unknown; change?: Change }>,
): Promise<unknown> {
  gate.refuseIfCancelled();
  const { seq, replay, live } = gate.begin(kind, name);
  if (replay) return replay;
  if (!live) return NEVER;
  const exec = gate.exec;
  await exec.durable();
  if (exec.state !== 'active' || !exec.host.mayRun(exec)) return NEVER;
  let op: OperationRecord;
  let change: Change | undefined;
  try {
    const out = await act(seq);
    op = { seq, kind, name, status: 'completed', result: out.value };
    change = out.change;
  } catch (err) {
    op = { seq, kind, name, status: 'failed', error: describeError(err) };
  }
  if (exec.state !== 'active') return NEVER;
  void exec.record(op, change);
  const replayed = exec.afterReplay();
  if (replayed) await replayed;
  return fromRecord(op);
}
