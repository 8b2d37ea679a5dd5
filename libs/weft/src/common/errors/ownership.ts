// Who may write a workflow: versions, claims, the global lease and the ownership mode.
import { ErrorCategory, WeftError } from './base.js';

/** Internal: the versioned compare-and-swap on a workflow row lost. */
export class WorkflowVersionConflictError extends WeftError {
  static readonly code = 'WEFT_VERSION_CONFLICT';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly expectedVersion: number,
  ) {
    super(`Workflow "${workflowId}" was advanced by another writer (expected version ${expectedVersion}); nothing was written.`);
  }
}

/** Internal: a fenced write was refused because this engine no longer owns the workflow. */
export class EngineDeposedError extends WeftError {
  static readonly code = 'WEFT_ENGINE_DEPOSED';
  static readonly category = ErrorCategory.Unavailable;
  constructor(readonly workflowId?: string) {
    super(workflowId ? `This engine no longer owns workflow "${workflowId}".` : 'This engine no longer holds the global lease.');
  }
}

export class WorkflowClaimUnavailableError extends WeftError {
  static readonly code = 'WEFT_WORKFLOW_CLAIM_UNAVAILABLE';
  static readonly category = ErrorCategory.Conflict;
  constructor(
    readonly workflowId: string,
    readonly heldBy: string | null,
  ) {
    super(
      `Workflow "${workflowId}" is claimed by engine ${heldBy ?? '(another engine)'}; it cannot be driven here now. Retry after that claim is released or expires.`,
    );
  }
}

export class OwnershipModeMismatchError extends WeftError {
  static readonly code = 'WEFT_OWNERSHIP_MODE_MISMATCH';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly configuredMode: string,
    readonly storedMode: string,
    readonly establishedAt: Date,
  ) {
    super(
      `This engine is configured with ownership '${configuredMode}', but the database was established with '${storedMode}' at ${establishedAt.toISOString()}. Run every engine of this database with the same mode (see docs/ownership.md for changing it).`,
    );
  }
}

export class EngineLeaseNotHeldError extends WeftError {
  static readonly code = 'WEFT_ENGINE_LEASE_NOT_HELD';
  static readonly category = ErrorCategory.Unavailable;
  constructor(
    readonly engineId: string,
    readonly heldBy: string | null,
  ) {
    super(
      `Engine ${engineId} does not hold the global lease (held by ${heldBy ?? 'nobody yet'}); under ownership 'lease' only the holder runs workflows. Raise leaseWaitTimeout, or use ownership 'workflow-lease' to share work.`,
    );
  }
}

export class OwnershipUnsupportedError extends WeftError {
  static readonly code = 'WEFT_OWNERSHIP_UNSUPPORTED';
  static readonly category = ErrorCategory.Internal;
  constructor(
    readonly configuredMode: string,
    detail: string,
  ) {
    super(`Ownership mode '${configuredMode}' needs conditional (fenced) writes, which this storage cannot do: ${detail}`);
  }
}
