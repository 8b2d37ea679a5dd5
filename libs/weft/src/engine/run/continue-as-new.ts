import { detached } from '../../common/detached.js';
import type { WorkflowDefinition } from '../../common/types.js';
import { Execution, ExecutionHost } from './execution.js';

/** What the switch needs from the runtime that hosts the run. */
export interface ContinueHost extends ExecutionHost {
  readonly closed: boolean;
  forget(exec: Execution): void;
  launch(def: WorkflowDefinition, exec: Execution): Promise<unknown>;
  /**
   * The run ended (metrics, parent-close policy for the children it started): resolves once the
   * policy has read which of them are live, never rejects.
   */
  runContinued(exec: Execution): Promise<void>;
}

/**
 * ctx.continueAsNew: one fenced, versioned commit turns the row into the next run (same id,
 * same claim, `run_number + 1`, the new input) and deletes the ended run's history, timers and
 * spent messages (storage/repositories/workflow-advance.ts). The next run then starts here,
 * in memory, with no reload: the ended run's unconsumed messages are handed over, so a signal
 * that arrived during the switch reaches the next run, at its first wait (not before run(), which
 * sets its state from its input: launched without `atStart`, see Runtime.launch). A crash before the commit replays the
 * old run, which calls continueAsNew again; after it, recovery finds the next run. Either way
 * there is exactly one next run.
 */
export function switchRun(host: ContinueHost, exec: Execution, input: unknown): void {
  const early = exec.replay?.endedEarly('continueAsNew() came first');
  if (early) return host.onNonDeterminism(exec, early);
  exec.end();
  // Never settles when the commit is refused: the host has then dropped the run and re-reads it.
  // The next run is this code's: its version is recorded as a start's would be.
  const abandoned = exec.abandonUpdates(); // their callers are told; the next run does not run them
  const change = { continueAsNew: { input, workflowVersion: exec.definition.version ?? null } };
  // The next run is made in no run's context: made in this one's, it would keep this run (and
  // this run the one before it) in memory for as long as it lives (common/detached.ts).
  const committed = exec.commit(abandoned.length ? { ...change, updateResults: abandoned } : change, true);
  void detached(() =>
    committed.then(() => {
      exec.stop(true); // the ended run's step bodies still running see their signal aborted
      host.forget(exec);
      const closing = host.runContinued(exec);
      if (host.closed) return; // recorded: whoever runs this workflow next starts the next run
      const next = new Execution(host, {
        workflowId: exec.workflowId,
        definition: exec.definition,
        input,
        runNumber: exec.runNumber + 1,
        version: exec.version,
        parentId: exec.parentId,
        singleton: exec.holdsSingleton,
        queue: exec.queue, // still in its queue, holding the slot its last run held
        // Traced: the next run's span is a root linked to the ended run's (as a loaded run's is).
        traceContext: exec.trace?.traceparent() ?? null,
        headers: exec.headers, // the row's, which the switch leaves as they are
        // Its children start once the ended run's live ones are read: a child id it reuses, started
        // before that read, would be read as the ended run's and cancelled.
        childrenAfter: closing,
      });
      // Child notices were deleted with the run: only its children could have awaited them.
      next.inbox.add(exec.inbox.messages.filter((m) => m.kind !== 'child'));
      next.inbox.inheritSeen(exec.inbox);
      void host.launch(exec.definition, next);
    }),
  );
}
