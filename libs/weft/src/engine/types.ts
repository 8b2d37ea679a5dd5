import type { OperationRecord } from '../storage/types.js';
import type { WorkflowStatus } from '../storage/entities/index.js';
import type { Duration } from './duration.js';
import type { WorkflowContext } from './context.js';

export type { WorkflowStatus };

/** A workflow class: a fresh instance runs (or replays) every execution. */
export interface WorkflowInstance<I = unknown, O = unknown> {
  run(ctx: WorkflowContext, input: I): Promise<O>;
}

export type WorkflowFactory = () => WorkflowInstance;

export interface WorkflowDefinition {
  name: string;
  factory: WorkflowFactory;
  /** Signal handlers by signal name: method names on the instance. */
  signalHandlers?: Record<string, string>;
  updateHandlers?: Record<string, string>;
  queryHandlers?: Record<string, string>;
}

export type IdPolicy = 'return-existing' | 'reject-duplicate' | 'start-new-if-terminal';

export interface StartOptions {
  workflowId?: string;
  idPolicy?: IdPolicy;
  /** Delayed start at this instant. */
  startAt?: Date;
  /** Delayed start after this long. */
  startAfter?: Duration;
  /** The whole execution must finish within this long, or it ends `timed_out`. */
  executionTimeout?: Duration;
  parentId?: string;
}

export interface RetryPolicy {
  maxAttempts?: number;
  initialInterval?: Duration;
  backoffCoefficient?: number;
  maxInterval?: Duration;
  /** Error names (err.name) that fail the step at once. */
  nonRetryable?: string[];
}

export interface StepOptions {
  retry?: RetryPolicy;
  /** Per-attempt timeout; the attempt's signal is aborted when it passes. */
  timeout?: Duration;
}

export interface StepArgs {
  attempt: number;
  /** `${workflowId}:${seq}`: the same on every retry and after a takeover. */
  idempotencyKey: string;
  signal: AbortSignal;
}

export interface WorkflowFailure {
  name: string;
  message: string;
  stack?: string;
  [key: string]: unknown;
}

export interface WorkflowDescription {
  workflowId: string;
  type: string;
  status: WorkflowStatus;
  input: unknown;
  output: unknown;
  error: WorkflowFailure | null;
  parentId: string | null;
  runNumber: number;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  deadline: Date | null;
  startAt: Date | null;
  version: number;
  history: OperationRecord[];
}

export interface ListFilter {
  status?: WorkflowStatus | WorkflowStatus[];
  type?: string;
  limit?: number;
  /** Opaque cursor from a previous page's `nextCursor`. */
  cursor?: string;
}

export interface WorkflowSummary {
  workflowId: string;
  type: string;
  status: WorkflowStatus;
  parentId: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

export interface ListPage {
  items: WorkflowSummary[];
  nextCursor: string | null;
}

export interface WeftLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug?(message: string): void;
}

export interface EngineHealthSnapshot {
  engineId: string;
  ownership: 'none' | 'lease' | 'workflow-lease';
  bootstrapped: boolean;
  disposed: boolean;
  /** Deposed from the global lease (ownership 'lease'): it runs nothing any more. */
  halted: boolean;
  backgroundTasks: 'auto' | 'manual';
  /** Start of the last background pass (renewal pass under ownership, timer tick under 'none'). */
  lastBackgroundPassAt: Date | null;
  backgroundIntervalMs: number;
  liveWorkflows: number;
  claimsHeld: number;
  renewalFailures: number;
}
