// ctx.startChild's start on the runtime's side: the default child id, which errors reach the
// workflow code, and the run's own record of the children it started (the parent-close policy
// closes those, and only those: Execution.childIds).
import { ErrorCategory, WeftError } from '../../common/errors.js';
import { Execution, NEVER } from './execution.js';

/** Child workflows need the engine's start path and its parent-close policy. */
export interface ChildHooks {
  /** Inserts (or finds) a child workflow and launches it, with its parent's headers; resolves with its id. */
  start(
    parentId: string,
    childId: string,
    type: string,
    input: unknown,
    seq: number,
    headers: Record<string, string> | null,
  ): Promise<string>;
  /**
   * A workflow ended (parent-close policy): its live children among `children` are cancelled, or
   * all its live children when the ending run's are not known here (an external transition).
   * Resolves once the live ones are read (never rejects); their cancels go on after.
   */
  terminated(workflowId: string, children?: string[], endsSingleton?: boolean): Promise<void>;
}

/**
 * A child's id when the code gives none: deterministic, and distinct per run of the parent
 * (idPolicy 'start-new-if-terminal'), so a later run never finds an earlier run's child.
 */
function defaultChildId(exec: Execution, seq: number): string {
  return exec.runNumber > 1 ? `${exec.workflowId}#${exec.runNumber}/${seq}` : `${exec.workflowId}/${seq}`;
}

/**
 * Starts (or finds) a child. Only bad input reaches the workflow code as an error: an engine
 * shutting down or a database away is never the workflow's fault, so the run is dropped (`stale`)
 * and driven again from storage (the child id is deterministic, so the start is idempotent).
 */
export async function startChildOf(
  hooks: ChildHooks,
  stale: (exec: Execution, err: unknown) => void,
  exec: Execution,
  seq: number,
  type: string,
  input: unknown,
  opts: { workflowId?: string },
): Promise<string> {
  try {
    const headers = Object.keys(exec.headers).length ? exec.headers : null; // a child inherits its parent's (docs/interceptors.md)
    if (exec.childrenAfter) await exec.childrenAfter; // the ended run's children are read first (continue-as-new.ts)
    const childId = await hooks.start(exec.workflowId, opts.workflowId ?? defaultChildId(exec, seq), type, input, seq, headers);
    exec.childStarted(childId);
    // Landed after its run ended (it continued as new while the start was under way): closed now.
    if (exec.childrenClosed) void hooks.terminated(exec.workflowId, [childId]);
    return childId;
  } catch (err) {
    // Errors of the workflow's own making (bad child input): these reach its code.
    if (err instanceof WeftError && err.category === ErrorCategory.Input) throw err;
    if (exec.state === 'active') {
      exec.stop();
      stale(exec, err);
    }
    return NEVER;
  }
}
