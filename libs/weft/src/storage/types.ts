import type { AttributeValue, OperationRecord, WorkflowAttributes, WorkflowStatus } from '../common/types.js';
import type { TimerKind } from './entities/index.js';

export interface TimerRequest {
  kind: TimerKind;
  seq: number;
  delayMs: number;
}

export interface MessageInsert {
  workflowId: string;
  kind: 'signal' | 'update' | 'child';
  name: string;
  payload: unknown;
}

/** ctx.setEvent: the key's latest value, upserted with the commit that carries the call. */
export interface EventWrite {
  key: string;
  value: unknown;
  /** The setEvent operation's seq. */
  seq: number;
}

/** ctx.writeStream (an entry) or ctx.closeStream (`close`), from workflow code, in call order. */
export interface StreamWrite {
  key: string;
  value?: unknown;
  close?: boolean;
}

export interface InboxMessage {
  id: string;
  kind: 'signal' | 'update' | 'child' | 'cancel';
  name: string;
  payload: unknown;
}

export interface MessageConsume {
  id: string;
  /** The operation that took it in; null for a message refused unapplied (engine/run/delivery.ts). */
  seq: number | null;
  status?: string;
  result?: unknown;
}

export interface ClaimFence {
  engineId: string;
  epoch: string;
}

/** Everything one advance of one workflow writes; applied only if `expectedVersion` matches (or, with `ifStatus`, the status). */
export interface AdvanceCommand {
  workflowId: string;
  expectedVersion: number;
  /**
   * An external transition (cancel, suspend, resume, timeout, delayed start): applied at whatever
   * version the row has when locked, provided its status is still this one, so that it wins
   * against a run that keeps committing; `expectedVersion` is then only what was read.
   */
  ifStatus?: WorkflowStatus;
  status?: WorkflowStatus;
  output?: { value: unknown };
  error?: { value: unknown };
  completed?: boolean;
  operations?: OperationRecord[];
  clearTimers?: boolean;
  deleteTimers?: Array<{ kind: TimerKind; seq: number }>;
  timers?: TimerRequest[];
  messages?: MessageInsert[];
  consume?: MessageConsume[];
  fence?: ClaimFence;
  /** Global-lease fence (ownership 'lease'). */
  leaseFence?: ClaimFence;
  /** Release the fenced claim in the same statement (terminal and suspend commits). */
  release?: boolean;
  /** Rotate the claim epoch and clear its holder (external terminal transitions). */
  rotate?: boolean;
  /**
   * ctx.continueAsNew: the row stays `running` under the same claim with this input and
   * `run_number + 1`; the run's history, its timers and its spent messages are deleted, and the
   * command's own operations and timers are not written (they belong to the run that ends).
   */
  continueAsNew?: { input: unknown; workflowVersion: string | null };
  /** The run's current workflow span as a W3C traceparent, stored on the row (tracing on only). */
  traceContext?: string;
  /** ctx.setAttributes: merged into the row's attributes; a null value removes its key. */
  attributes?: Readonly<Record<string, AttributeValue>>;
  /** ctx.setEvent: each key's value upserted into weft_events (the last per key wins), with a NOTIFY. */
  events?: EventWrite[];
  /** ctx.signalWorkflow: signals stored with this commit, for targets that still take signals then. */
  sends?: Array<{ workflowId: string; name: string; payload: unknown }>;
  /** ctx.writeStream / ctx.closeStream from workflow code: appended at the stream's next offsets, with a NOTIFY. */
  streams?: StreamWrite[];
  /** Async update handlers that finished: their accepted request rows get the outcome. */
  updateResults?: UpdateResultWrite[];
  /** A queued run's end hands its slot to the queue's next enqueued workflow, in the same statement (docs/decisions/0042). */
  handoff?: HandoffRequest;
}

/**
 * A queued run's end: whether it hands its slot to the queue's next workflow (`pick`), of the types
 * the engine runs, under its claim terms (null engine: no claims); `notifier` is the engine's id,
 * carried by the NOTIFY that tells the other engines a slot freed while work was left.
 */
export interface HandoffRequest {
  queue: string;
  pick: boolean;
  notifier: string;
  types: string[];
  engineId: string | null;
  ttlMs: number | null;
  graceMs: number | null;
}

/** What a queued run's end did with its slot: the workflow it went to (null: freed), and whether the queue has work left. */
export interface HandoffOutcome {
  to: AdmittedWorkflow | null;
  more: boolean;
}

/** A workflow admitted into a queue (by the admission function or a hand-off), to be launched by the engine that admitted it. */
export interface AdmittedWorkflow {
  id: string;
  type: string;
  input: unknown;
  parentId: string | null;
  runNumber: number;
  version: number;
  claimEpoch: string | null;
  inbox: InboxMessage[];
  /** It holds a singleton key. */
  singleton: boolean;
  /**
   * Whether timer rows may exist for it (its execution deadline's); absent (the admission function
   * does not say): assumed. Without any, its end commit does not look for timers to delete.
   */
  storedTimers?: boolean;
  /**
   * What its start stored for its run to begin with (docs/decisions/0046): the headers its start
   * interceptors left (a payload, as stored: decoded by the launch), its attributes and its
   * starter's traceparent; null when none, absent when the admission did not say.
   */
  headers?: Record<string, string> | null;
  attributes?: WorkflowAttributes | null;
  traceContext?: string | null;
}

/** The outcome of an accepted update (status `done` or `failed`), for its caller. */
export interface UpdateResultWrite {
  id: string;
  status: 'done' | 'failed';
  result: unknown;
}

/**
 * A refused advance wrote nothing: `version` (another writer advanced the workflow), `fence`
 * (this engine's claim or lease moved) or `consume` (a message it consumes is no longer pending,
 * e.g. an update whose caller gave up).
 */
export type AdvanceOutcome =
  | { workflowId: string; ok: true; version: number; handoff?: HandoffOutcome }
  | { workflowId: string; ok: false; reason: 'version' | 'fence' | 'consume' };

export interface WorkflowRow {
  id: string;
  type: string;
  status: WorkflowStatus;
  input: unknown;
  output: unknown;
  error: unknown;
  parentId: string | null;
  runNumber: number;
  deadline: Date | null;
  startAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
  version: number;
  /** `@Workflow(name, { version })` of the code that started this run. */
  workflowVersion: string | null;
  /** Queues (docs/queues.md): null outside a queue. */
  queue: string | null;
  priority: number;
  admittedAt: Date | null;
  /** Read by `get` only (describe); absent from the other reads. */
  attributes?: WorkflowAttributes;
  /** Read by `get` only: engine.fork's source, engine.retry's run (null when neither). */
  forkedFrom?: { workflowId: string; runNumber: number; fromSeq: number } | null;
  retriedFrom?: { runNumber: number; fromSeq: number } | null;
}

export interface TimerRow {
  id: string;
  workflowId: string;
  kind: TimerKind;
  seq: number;
  fireAt: Date;
  /** The workflow row's fence_epoch as the timer was taken: the wake ownership check needs no read of its own. */
  fenceEpoch: string | null;
}

/** One workflow to start (WorkflowRepository.startMany). */
export interface InsertWorkflow {
  id: string;
  type: string;
  status: 'pending' | 'enqueued' | 'running';
  input: unknown;
  parentId: string | null;
  deadlineInMs: number | null;
  startInMs: number | null;
  timers: Array<{ kind: 'delayed-start' | 'execution-deadline'; delayMs: number }>;
  /** The claim written with the row: held by the inserting engine, a free row, or none. */
  claim?: 'mine' | 'free' | null;
  /** Signal-with-start: stored in the same statement as the row. */
  signal?: { name: string; payload: unknown } | null;
  /** The starter's active span as a W3C traceparent (tracing on, inside a span). */
  traceContext?: string;
  /** `@Workflow(name, { version })` of the type, when the starting engine registers it. */
  workflowVersion?: string | null;
  /** The queue that admits it (status 'enqueued'), and its priority there; absent outside a queue. */
  queue?: string;
  priority?: number;
  /** Its key in a partitioned queue. */
  partitionKey?: string;
  /** At most one live workflow of its type holds this key (WorkflowRepository.startSingleton). */
  singletonKey?: string;
  /** A debounced start (WorkflowRepository.startDebounced): its key, delay and latest start, in ms from now. */
  debounce?: { key: string; delayMs: number; maxDelayMs: number | null };
  /** start(..., { attributes }), checked; absent when none. */
  attributes?: WorkflowAttributes;
  /** What the start interceptors left (checked), or a parent's; absent or null when none. */
  headers?: Record<string, string> | null;
}

/**
 * `list({ attributes })` as the repository runs it: every group of `contains` must hold (the
 * attributes contain one of its objects: the GIN index answers it), and every range.
 */
export interface AttributeQuery {
  contains: Array<Array<Record<string, AttributeValue>>>;
  ranges: Array<{ key: string; op: '>' | '>=' | '<' | '<='; on: 'number' | 'timestamp'; value: number | string }>;
}
