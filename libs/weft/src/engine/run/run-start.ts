import type { WorkflowDefinition } from '../../common/types.js';
import { stepBodyStorage, workflowContextStorage } from '../als.js';
import { WorkflowContextImpl } from './context.js';
import type { Execution } from './execution.js';

/**
 * Starts an execution's code: a fresh instance, a replay driver over its history (with the
 * deliveries recorded before the first call applied), then run() inside the workflow's context.
 * `fresh` runs instead of the driver when there is no history (a start's deliveries before run()). The engine's launch and the
 * WorkflowReplayer both start runs this way.
 *
 * A run is its own context wherever it was launched from: a start inside another workflow's step
 * body would otherwise carry that body's mark, and the new run's @Step calls would run as plain,
 * unrecorded calls (which its replay then finds missing).
 */
export function startRun(def: WorkflowDefinition, exec: Execution, fresh?: () => void, onCode?: () => void): Promise<unknown> {
  return stepBodyStorage.exit(() => enterRun(def, exec, fresh, onCode));
}

/** `onCode`: called right before run() is (the replay driver starts then, however long the run hooks took). */
function enterRun(def: WorkflowDefinition, exec: Execution, fresh?: () => void, onCode?: () => void): Promise<unknown> {
  const ctx = new WorkflowContextImpl(exec);
  const instance = def.factory();
  // Handlers reach the context as this.ctx (DESIGN 9.8): set before any handler or run() runs.
  setContext(instance, ctx);
  if (!workflowContextStorage.run(ctx, () => exec.setUp(instance, ctx))) fresh?.();
  return workflowContextStorage.run(ctx, () =>
    Promise.resolve().then(() => {
      exec.codeBegins();
      const hook = exec.host.options.interceptors?.run;
      if (!hook) return instance.run(ctx, exec.input);
      const input = {
        workflowType: def.name,
        workflowId: exec.workflowId,
        runNumber: exec.runNumber,
        input: exec.input,
        headers: exec.headers,
      };
      return hook(
        input,
        (i) =>
          new Promise((resolve) => {
            onCode?.();
            resolve(instance.run(ctx, i.input));
          }),
      );
    }),
  );
}

/** `this.ctx` on the instance: the property is reserved; a class that made it read-only keeps its own. */
function setContext(instance: object, ctx: WorkflowContextImpl): void {
  try {
    (instance as { ctx?: unknown }).ctx = ctx;
  } catch {
    /* a getter without a setter, or a frozen instance: nothing to set */
  }
}
