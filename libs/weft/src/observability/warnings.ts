/** Warnings go to process 'warning' listeners and the engine's logger; none carries secrets. */
export class WeftWorkflowClaimLostWarning extends Error {
  override readonly name = 'WeftWorkflowClaimLostWarning';
  constructor(
    readonly workflowId: string,
    readonly engineId: string,
    readonly reason: 'renewal' | 'fence',
  ) {
    super(`Engine ${engineId} lost its claim on workflow "${workflowId}" (${reason}); it stopped driving it here.`);
  }
}

export class WeftWorkflowWakeDiscardedWarning extends Error {
  override readonly name = 'WeftWorkflowWakeDiscardedWarning';
  constructor(
    readonly workflowId: string,
    readonly wakeKind: string,
  ) {
    super(`A ${wakeKind} wake for workflow "${workflowId}" was discarded: this engine no longer holds it at the epoch it parked under.`);
  }
}

export class WeftEngineLeaseLostWarning extends Error {
  override readonly name = 'WeftEngineLeaseLostWarning';
  constructor(readonly engineId: string) {
    super(`Engine ${engineId} lost the global lease and halted; another engine now runs the workflows.`);
  }
}

/** Logs the warning, hands it to the engine's `onWarning` hook if any, and emits it on process. */
export function emitWeftWarning(w: Error, log?: (m: string) => void, hook?: (w: Error) => void): void {
  log?.(`${w.name}: ${w.message}`);
  hook?.(w);
  process.emitWarning(w);
}
