// The catalogue of operation kinds: per kind, how a live call is recorded, how replay gives it
// back, what delivers its result, and how the dashboard and the CLI show it. The engine's
// context (engine/run/context.ts and engine/run/calls/) holds each kind's behaviour; everything
// else reads this table, so a new kind is one entry here plus its ctx method (docs/architecture.md).

/**
 * How a live operation reaches storage.
 * - `commit`: its record is queued for the run's next commit when it resolves.
 * - `next-commit`: a value the code gets back at once (now, random, ...), written with whatever
 *   the run commits next, so it costs no round trip of its own.
 * - `delivery`: recorded when a message is applied to the run, with the message's consumption.
 */
export type Recording = 'commit' | 'next-commit' | 'delivery';

/**
 * How replay gives a recorded operation back.
 * - `in-order`: the replay driver releases its result in the order the live run saw it resolve.
 * - `at-call`: returned synchronously when the code calls it (the driver passes over it).
 * - `applied`: not called by the code; the driver applies it at its place (handler deliveries).
 */
export type Replaying = 'in-order' | 'at-call' | 'applied';

export interface OperationKindSpec {
  readonly recorded: Recording;
  readonly replayed: Replaying;
  /**
   * What resolves a live call: `call` (at once), `body` (a step's attempts), `start` (a child's
   * start), `timer`, `message` (a buffered message of kind `message`) or `predicate`.
   */
  readonly resolvedBy: 'call' | 'body' | 'start' | 'timer' | 'message' | 'predicate';
  /** A live wait: the run may park on it until a timer or a message resolves it. */
  readonly waits: boolean;
  /** The message kind that resolves this wait (`resolvedBy: 'message'`). */
  readonly message?: 'signal' | 'child';
  /** The wait's result when its timer fires first (a sleep's end, a timeout). */
  readonly onTimer?: null | false;
  /** For people: what the dashboard and `weft history` print for the kind. */
  readonly label: string;
}

/** Every kind, by the name stored in `weft_operations.kind`. */
export const OPERATION_KINDS = {
  step: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'body', waits: false, label: 'step' },
  sleep: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'timer', waits: true, onTimer: null, label: 'sleep' },
  waitForSignal: {
    recorded: 'commit',
    replayed: 'in-order',
    resolvedBy: 'message',
    waits: true,
    message: 'signal',
    onTimer: null,
    label: 'wait for signal',
  },
  condition: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'predicate', waits: true, onTimer: false, label: 'condition' },
  startChild: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'start', waits: false, label: 'start child' },
  childResult: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'message', waits: true, message: 'child', label: 'child result' },
  signal: { recorded: 'delivery', replayed: 'applied', resolvedBy: 'message', waits: false, label: 'signal handled' },
  update: { recorded: 'delivery', replayed: 'applied', resolvedBy: 'message', waits: false, label: 'update handled' },
  cancelRequested: { recorded: 'delivery', replayed: 'applied', resolvedBy: 'message', waits: false, label: 'cancel requested' },
  now: { recorded: 'next-commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'now' },
  random: { recorded: 'next-commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'random' },
  uuid: { recorded: 'next-commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'uuid' },
  patch: { recorded: 'next-commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'patch marker' },
  setAttributes: { recorded: 'commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'set attributes' },
  setEvent: { recorded: 'commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'set event' },
  writeStream: { recorded: 'commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'stream entry' },
  closeStream: { recorded: 'commit', replayed: 'at-call', resolvedBy: 'call', waits: false, label: 'close stream' },
  signalWorkflow: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'body', waits: false, label: 'signal workflow' },
  cancelWorkflow: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'body', waits: false, label: 'cancel workflow' },
  startWorkflow: { recorded: 'commit', replayed: 'in-order', resolvedBy: 'start', waits: false, label: 'start workflow' },
} as const satisfies Record<string, OperationKindSpec>;

export type OperationKind = keyof typeof OPERATION_KINDS;

/** The kinds a run can park on. */
export type WaitKind = { [K in OperationKind]: (typeof OPERATION_KINDS)[K]['waits'] extends true ? K : never }[OperationKind];

/** The spec of a stored kind; undefined for one this version does not know (a newer engine's). */
export function operationKind(kind: string): OperationKindSpec | undefined {
  return Object.hasOwn(OPERATION_KINDS, kind) ? OPERATION_KINDS[kind as OperationKind] : undefined;
}

/** What people see for a stored kind: its label, or the kind itself when it is not known here. */
export const kindLabel = (kind: string): string => operationKind(kind)?.label ?? kind;

const WAIT_BY_MESSAGE = new Map<string, WaitKind>();
for (const [kind, spec] of Object.entries(OPERATION_KINDS) as Array<[string, OperationKindSpec]>)
  if (spec.message) WAIT_BY_MESSAGE.set(spec.message, kind as WaitKind);

/** The wait kind a buffered message of `message` kind resolves (signal, child notice). */
export function waitKindFor(message: string): WaitKind | undefined {
  return WAIT_BY_MESSAGE.get(message);
}
