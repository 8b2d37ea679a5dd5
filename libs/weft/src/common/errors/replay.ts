// A history that does not replay on the current code: non-determinism, a refused fork or retry.
import { ErrorCategory, WeftError } from './base.js';

/**
 * engine.fork or engine.retry: the kept part of the history does not replay on the current code
 * (docs/api.md, "Repair"). `report` is the WorkflowReplayer's; nothing was written.
 */
export class ForkRefusedError extends WeftError {
  static readonly code = 'WEFT_FORK_REFUSED';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly fromSeq: number,
    readonly report: { ok: false; error: { name?: string; message: string } },
    readonly operation: 'fork' | 'retry' = 'fork',
    options?: { cause?: unknown },
  ) {
    super(
      `The ${operation} of workflow "${workflowId}" from seq ${fromSeq} was refused: the history it keeps does not replay on the ` +
        `current code (${report.error.message}). Fork from an earlier step, or deploy code that replays it (docs/versioning.md).`,
      options,
    );
  }
}

export class NonDeterminismError extends WeftError {
  static readonly code = 'WEFT_NON_DETERMINISM';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly workflowId: string,
    readonly seq: number,
    readonly recorded: { kind: string; name: string },
    readonly replayed: { kind: string; name: string },
  ) {
    super(
      `Workflow "${workflowId}" is not deterministic at operation ${seq}: history has ${recorded.kind} "${recorded.name}" but the code now calls ${replayed.kind} "${replayed.name}".${
        recorded.kind === 'patch'
          ? ` Patch "${recorded.name}" was removed while runs that recorded it still run: bring back ctx.patched("${recorded.name}") (or ctx.deprecatePatch) until they have ended (docs/versioning.md).`
          : ''
      } The workflow is suspended; deploy code that matches its history and resume it.`,
    );
  }
}
