import { AsyncLocalStorage } from 'node:async_hooks';
import type { WorkflowContext } from '../common/types.js';
import type { StepArgs } from '../common/types.js';

/** The workflow context of the code running now, if any (used by @Step and helpers). */
export const workflowContextStorage = new AsyncLocalStorage<WorkflowContext>();

export function currentWorkflowContext(): WorkflowContext | undefined {
  return workflowContextStorage.getStore();
}

/**
 * Marks code running inside a step body. The workflow context flows into step bodies too, so
 * without this a @Step method called from a step body would record a nested step, which replay
 * cannot reproduce (the outer step's recorded result skips the body).
 */
export const stepBodyStorage = new AsyncLocalStorage<StepArgs>();

/** The step being executed (attempt, idempotencyKey, signal), or undefined outside a step body. */
export function currentStep(): StepArgs | undefined {
  return stepBodyStorage.getStore();
}

export function insideStepBody(): boolean {
  return stepBodyStorage.getStore() !== undefined;
}

/** Marks workflow code inside ctx.nonCancellable: its calls are not cancelled (docs/cancellation.md). */
export const nonCancellableStorage = new AsyncLocalStorage<true>();
