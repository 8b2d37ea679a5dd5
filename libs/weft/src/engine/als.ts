import { AsyncLocalStorage } from 'node:async_hooks';
import type { WorkflowContext } from './context';

/** The workflow context of the code running now, if any (used by @Step and helpers). */
export const workflowContextStorage = new AsyncLocalStorage<WorkflowContext>();

export function currentWorkflowContext(): WorkflowContext | undefined {
  return workflowContextStorage.getStore();
}
