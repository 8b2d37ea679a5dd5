import type { AdvanceCommand, AdvanceOutcome, MessageInsert } from '../storage/types.js';

/** The durable message a child's end sends its parent. */
export function childNotice(parentId: string, childId: string, s: Settled): MessageInsert {
  return { workflowId: parentId, kind: 'child', name: childId, payload: { status: s.status, output: s.output, error: s.error } };
}

export interface RuntimeHooks {
  decorate(command: AdvanceCommand, runEpoch?: string): AdvanceCommand;
  committed(command: AdvanceCommand, outcome: AdvanceOutcome): void;
  holds(workflowId: string): boolean;
  mayRun(workflowId: string): boolean;
  /** Inserts (or finds) a child workflow and launches it; resolves with its id. */
  startChild(parentId: string, childId: string, type: string, input: unknown): Promise<string>;
  /** A workflow ended here (parent-close policy); `startedChildren` false skips the lookup. */
  terminated(workflowId: string, startedChildren?: boolean): void;
  /** A workflow this engine went to drive is not running (any more): let go of its claim. */
  notRunning(workflowId: string): void;
  epochOf(workflowId: string): string | undefined;
  wakeCheck(workflowId: string, parkedEpoch: string | undefined, wakeKind: string): Promise<boolean>;
}

export interface Settled {
  status: string;
  output: unknown;
  error: unknown;
}
