// The waiting ctx calls on the runtime side (ctx.sleep, ctx.waitForSignal, ctx.condition) and the
// live wait they and a child's result park on, with its timer row when it has a timeout.
import { InvalidArgumentError } from '../../../common/errors.js';
import { Duration, parseDuration } from '../../../common/duration.js';
import { validateName } from '../../validation.js';
import { NEVER, Wait } from '../execution.js';
import { CallGate } from './call-gate.js';

/** Durable timer; survives restarts. */
export async function runSleep(gate: CallGate, duration: Duration, cancellable: boolean): Promise<void> {
  gate.active('sleep');
  const ms = parseDuration(duration, 'ctx.sleep duration');
  const { seq, replay, live } = gate.begin('sleep', 'sleep');
  if (replay) return replay as Promise<void>;
  if (!live || (cancellable && gate.exec.cancelAhead)) return NEVER;
  await waitLive(gate, seq, { kind: 'sleep', name: 'sleep', timer: 'sleep', shielded: !cancellable }, ms);
}

/** Consumes the oldest unconsumed signal of that name; null on timeout. */
export async function runWaitForSignal<T>(
  gate: CallGate,
  name: string,
  opts: { timeout?: Duration },
  cancellable: boolean,
): Promise<T | null> {
  gate.active('waitForSignal');
  validateName('signal name', name);
  const exec = gate.exec;
  if (exec.definition.signalHandlers?.[name]) {
    throw new InvalidArgumentError(
      `waitForSignal("${name}")`,
      `workflow "${exec.definition.name}" has a signal handler for "${name}", which receives every such signal; wait with ctx.condition() instead`,
    );
  }
  const timeoutMs = opts.timeout === undefined ? undefined : parseDuration(opts.timeout, 'waitForSignal timeout');
  const { seq, replay, live } = gate.begin('waitForSignal', name);
  if (replay) return replay as Promise<T | null>;
  if (!live || (cancellable && exec.cancelAhead)) return NEVER;
  return waitLive(
    gate,
    seq,
    { kind: 'waitForSignal', name, timer: timeoutMs === undefined ? undefined : 'message-timeout', shielded: !cancellable },
    timeoutMs,
  ) as Promise<T | null>;
}

/** Waits until `pred()` holds, re-evaluated after each handler delivery; false on timeout. */
export async function runCondition(
  gate: CallGate,
  pred: () => boolean,
  opts: { timeout?: Duration },
  cancellable: boolean,
): Promise<boolean> {
  gate.active('condition');
  if (typeof pred !== 'function') throw new InvalidArgumentError('condition', 'needs a predicate function');
  const timeoutMs = opts.timeout === undefined ? undefined : parseDuration(opts.timeout, 'condition timeout');
  const { seq, replay, live } = gate.begin('condition', 'condition');
  if (replay) return replay as Promise<boolean>;
  const exec = gate.exec;
  if (!live || (cancellable && exec.cancelAhead)) return NEVER;
  if (!exec.isReplaying && pred()) {
    void exec.record({ seq, kind: 'condition', name: 'condition', status: 'completed', result: true });
    return true;
  }
  const timer = timeoutMs === undefined ? undefined : ('message-timeout' as const);
  return waitLive(gate, seq, { kind: 'condition', name: 'condition', pred, timer, shielded: !cancellable }, timeoutMs) as Promise<boolean>;
}

/** Registers a live wait, with its timer when it has a timeout; a due timer resolves it at once. */
export async function waitLive(gate: CallGate, seq: number, wait: Omit<Wait, 'resolve'>, timeoutMs?: number): Promise<unknown> {
  const exec = gate.exec;
  const parked = exec.wait(seq, wait);
  if (wait.timer && timeoutMs !== undefined) {
    const timer = exec.timers.get(seq);
    if (timeoutMs === 0 || exec.firedTimers.has(seq) || (timer !== undefined && timer <= exec.loadedAtDbNow)) {
      exec.fireTimer(seq);
    } else if (!timer) {
      await exec.commit({ timers: [{ kind: wait.timer, seq, delayMs: timeoutMs }] });
      const fireAt = exec.host.options.clock.now() + timeoutMs;
      exec.timerStored(seq, new Date(fireAt));
      if (exec.waits.has(seq)) exec.host.timers.armed(exec.workflowId, seq, fireAt);
    } else if (!exec.readOnly) {
      exec.host.timers.armed(exec.workflowId, seq, timer.getTime()); // loaded: armed again by its new run
    }
  }
  return parked;
}
