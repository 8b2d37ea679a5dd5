import type { WorkflowDefinition } from '../common/types.js';
import { workflowContextStorage } from './als.js';
import { WorkflowContextImpl } from './context.js';
import type { Execution } from './execution.js';
import { ReplayDriver } from './replay-driver.js';

/**
 * Starts an execution's code: a fresh instance, a replay driver over its history (with the
 * deliveries recorded before the first call applied), then run() inside the workflow's context.
 * `fresh` runs instead of the driver when there is no history. The engine's launch and the
 * WorkflowReplayer both start runs this way.
 */
export function startRun(def: WorkflowDefinition, exec: Execution, fresh?: () => void): Promise<unknown> {
  const ctx = new WorkflowContextImpl(exec);
  const instance = (exec.instance = def.factory());
  if (exec.history.size > 0) {
    exec.replay = new ReplayDriver(exec, exec.history.values());
    exec.replay.applyLeading();
  } else {
    fresh?.();
  }
  return workflowContextStorage.run(ctx, () => Promise.resolve().then(() => instance.run(ctx, exec.input)));
}
