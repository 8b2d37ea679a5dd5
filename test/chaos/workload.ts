// The workload: W workflows of mixed shapes, planned from the seed, each with its expected
// terminal state, output and history shape, computed here independently of the workflow code.
import {
  childId,
  childInput,
  chunkMsOf,
  heartbeatTimeoutOf,
  spawnedId,
  spawnedInput,
  type ChaosInput,
} from '../../apps/worker/src/workflows.js';
import { intBetween, Rng } from './util.js';

export type Shape =
  | 'steps'
  | 'sleepy'
  | 'signals'
  | 'updates'
  | 'parent'
  | 'child'
  | 'expiring'
  | 'delayed'
  | 'cancelrace'
  | 'suspendable'
  | 'chain'
  | 'spawner'
  | 'spawned'
  | 'reuse'
  | 'busycancel'
  | 'txsteps'
  | 'cancelcleanup';

/** Planned alongside another (started by its workflow), never by the driver. */
type Started = 'child' | 'spawned';

export const SHAPES: Exclude<Shape, Started>[] = [
  'steps',
  'sleepy',
  'signals',
  'updates',
  'parent',
  'expiring',
  'delayed',
  'cancelrace',
  'suspendable',
  'chain',
  'spawner',
  'reuse',
  'busycancel',
  'txsteps',
  'cancelcleanup',
];

/** The edge shapes of issue #32: fewer of each by default, so a small run keeps its length. */
const EDGE_WEIGHT = 0.5;
const DEFAULT_WEIGHT: Partial<Record<Exclude<Shape, Started>, number>> = {
  chain: EDGE_WEIGHT,
  spawner: EDGE_WEIGHT,
  reuse: EDGE_WEIGHT,
  busycancel: EDGE_WEIGHT,
  txsteps: EDGE_WEIGHT,
  cancelcleanup: EDGE_WEIGHT,
};

export interface WorkloadOptions {
  workflows: number;
  steps: number;
  stepMs: number;
  sleepMs: number;
  signals: number;
  updates: number;
  children: number;
  /** Relative weights of the shapes (default: equal). */
  mix?: Partial<Record<Exclude<Shape, Started>, number>>;
  /** 'expiring': client timeouts of its updates (ms range), shorter than its steps (stepMs x 3). */
  updateTimeoutMs?: [number, number];
  /** 'delayed': startAfter (ms range). */
  startAfterMs?: [number, number];
}

export interface PlannedWorkflow {
  id: string;
  shape: Shape;
  type: string;
  input: ChaosInput;
  parentId: string | null;
  /** Signals 'add' the harness sends (token, value), then 'finish'. */
  signals: Array<{ token: string; value: number }>;
  finishValue: number;
  /** Update tokens the harness sends, one at a time. */
  updates: string[];
  /** 'expiring': each update's client timeout (ms), in the order of `updates`. */
  updateTimeoutsMs: number[];
  /** 'delayed': the start's startAfter (ms); the driver may move it next to a scheduled engine kill. */
  startAfterMs: number | null;
  /** 'cancelrace': the cancel is sent this long after the start (through another engine). */
  cancelAfterMs: number | null;
  /** 'suspendable': suspend this long after the start, resume this long after the suspend. */
  suspendAfterMs: number | null;
  resumeAfterMs: number | null;
  /** 'spawned': the workflow whose step starts it (the driver starts every other top-level one). */
  startedBy: string | null;
  /** 'chain': its messages in sending order (signal 'add' or update 'bump'), each with its pause before it (ms). */
  chainMessages: Array<{ kind: 'signal' | 'update'; token: string; value: number; afterMs: number }>;
  /** 'busycancel', 'cancelcleanup': the cancel is sent this long after the start was acknowledged (through a random engine). */
  busyCancelAfterMs: number | null;
  /** Terminal statuses the workload accepts (default: completed only). */
  allowedStatuses: string[];
  /**
   * The expected output. For 'expiring' the counter is the number of updates applied, which the
   * checks read from weft_messages (status 'done'); this holds the rest of the output.
   */
  expectedOutput: unknown;
  /** Operation kinds the history must hold exactly (signal/update counts come from the messages). */
  expectedKinds: Record<string, number>;
}

const stepValue = (salt: number, i: number) => salt + 7 * (i + 1);
const sumSteps = (salt: number, from: number, to: number) => {
  let s = 0;
  for (let i = from; i < to; i++) s += stepValue(salt, i);
  return s;
};

function sleepyKinds(steps: number): Record<string, number> {
  let sleeps = 0;
  for (let i = 0; i < steps; i++) if (i !== 1 && i % 2 === 0 && i < steps - 1) sleeps++;
  return { step: steps, condition: steps > 1 ? 1 : 0, sleep: sleeps };
}

function chooseShape(r: Rng, o: WorkloadOptions): Exclude<Shape, Started> {
  const weights = SHAPES.map((s) => o.mix?.[s] ?? DEFAULT_WEIGHT[s] ?? 1);
  let x = r() * weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < SHAPES.length; i++) {
    x -= weights[i];
    if (x < 0) return SHAPES[i];
  }
  return 'steps';
}

/** A planned workflow of `shape` with nothing scheduled around it (the shapes' planners fill it in; the check fixtures too). */
export function blank(id: string, shape: Shape, input: ChaosInput, parentId: string | null = null): PlannedWorkflow {
  return {
    id,
    shape,
    type: `chaos.${shape}`,
    input,
    parentId,
    signals: [],
    finishValue: 0,
    updates: [],
    updateTimeoutsMs: [],
    startAfterMs: null,
    cancelAfterMs: null,
    suspendAfterMs: null,
    resumeAfterMs: null,
    startedBy: null,
    chainMessages: [],
    busyCancelAfterMs: null,
    allowedStatuses: ['completed'],
    expectedOutput: null,
    expectedKinds: {},
  };
}

function planOne(r: Rng, o: WorkloadOptions, index: number, shape: Exclude<Shape, Started>): PlannedWorkflow[] {
  const id = `wf${String(index).padStart(5, '0')}-${shape}`;
  const input: ChaosInput = { steps: o.steps, stepMs: o.stepMs, salt: intBetween(r, 1, 1_000_000), sleepMs: o.sleepMs };
  const w = blank(id, shape, input);
  const sum = sumSteps(input.salt, 0, o.steps);
  w.expectedKinds = { step: o.steps };
  // 'txsteps': transactional steps, each committing its application row with its record.
  if (shape === 'steps' || shape === 'txsteps') w.expectedOutput = { sum };
  if (shape === 'sleepy') {
    w.expectedOutput = { sum, timedOut: o.steps > 1 };
    w.expectedKinds = sleepyKinds(o.steps);
  }
  if (shape === 'signals') {
    input.signals = o.signals;
    w.signals = Array.from({ length: o.signals }, (_, k) => ({ token: `${id}:a${k}`, value: intBetween(r, 1, 1000) }));
    w.finishValue = intBetween(r, 1, 1000);
    const total = w.signals.reduce((a, s) => a + s.value, 0);
    w.expectedOutput = { sum, count: o.signals, total, finish: w.finishValue };
    w.expectedKinds = { step: o.steps, condition: 1, waitForSignal: 1 };
  }
  if (shape === 'updates') {
    input.updates = o.updates;
    w.updates = Array.from({ length: o.updates }, (_, k) => `${id}:u${k}`);
    w.expectedOutput = { sum, counter: o.updates };
    w.expectedKinds = { step: o.steps, condition: 1 };
  }
  if (shape === 'expiring') {
    // Longer steps, so updates sent while the workflow is in one expire before its next delivery point.
    input.stepMs = o.stepMs * 3;
    input.updates = o.updates;
    w.updates = Array.from({ length: o.updates }, (_, k) => `${id}:x${k}`);
    const [lo, hi] = o.updateTimeoutMs ?? [40, 400];
    w.updateTimeoutsMs = w.updates.map(() => intBetween(r, lo, hi));
    w.finishValue = intBetween(r, 1, 1000);
    w.expectedOutput = { sum, finish: w.finishValue };
    w.expectedKinds = { step: o.steps, waitForSignal: 1 };
  }
  if (shape === 'delayed') {
    const [lo, hi] = o.startAfterMs ?? [300, 3000];
    w.startAfterMs = intBetween(r, lo, hi);
    w.expectedOutput = { sum };
  }
  if (shape === 'cancelrace') {
    // 3 steps: the cancel lands before the start, between its insert and its first step, mid-run or after the end.
    input.steps = Math.min(3, o.steps);
    w.cancelAfterMs = intBetween(r, 0, input.steps * input.stepMs * 1.5);
    w.allowedStatuses = ['completed', 'cancelled'];
    w.expectedOutput = { sum: sumSteps(input.salt, 0, input.steps) };
    w.expectedKinds = { step: input.steps };
  }
  if (shape === 'suspendable') {
    w.suspendAfterMs = intBetween(r, 0, o.steps * o.stepMs);
    w.resumeAfterMs = intBetween(r, 100, 2000);
    w.expectedOutput = { sum };
  }
  if (EDGE_SHAPES.has(shape)) return planEdge(r, o, w);
  if (shape !== 'parent') return [w];
  input.children = o.children;
  const kids = Array.from({ length: o.children }, (_, j) => {
    const ci = childInput(input, j);
    const c = blank(childId(id, j), 'child', ci, id);
    c.expectedOutput = { sum: sumSteps(ci.salt, 0, ci.steps) };
    c.expectedKinds = { step: ci.steps, sleep: 1 };
    return c;
  });
  w.expectedOutput = { sum, children: kids.map((k) => (k.expectedOutput as { sum: number }).sum) };
  w.expectedKinds = { step: o.steps, startChild: o.children, childResult: o.children };
  return [w, ...kids];
}

/** The shapes of issue #32 (chain, reuse, busycancel, spawner): the workflows they make, each with its expected outcome. */
function planEdge(r: Rng, o: WorkloadOptions, w: PlannedWorkflow): PlannedWorkflow[] {
  const input = w.input;
  const sum = sumSteps(input.salt, 0, input.steps);
  if (w.shape === 'chain') planChain(r, o, w);
  if (w.shape === 'reuse') {
    // The plan is the second start's: the first (gen 1) is purged once it completed.
    input.gen = 2;
    w.expectedOutput = { sum, gen: 2, run: 1 };
  }
  if (w.shape === 'busycancel') {
    // Long steps; the cancel lands while one is in flight (or, on a slow run, after the end).
    input.steps = Math.min(3, o.steps);
    input.stepMs = o.stepMs * 4;
    w.busyCancelAfterMs = intBetween(r, input.stepMs / 2, input.steps * input.stepMs);
    w.allowedStatuses = ['completed', 'cancelled'];
    w.expectedOutput = { sum: sumSteps(input.salt, 0, input.steps) };
    w.expectedKinds = { step: input.steps };
  }
  if (w.shape === 'cancelcleanup') planCancelCleanup(r, o, w);
  if (w.shape !== 'spawner') return [w];
  const si = spawnedInput(input);
  const spawned = blank(spawnedId(w.id), 'spawned', si);
  spawned.type = 'chaos.steps';
  spawned.startedBy = w.id;
  spawned.expectedOutput = { sum: sumSteps(si.salt, 0, si.steps) };
  spawned.expectedKinds = { step: si.steps };
  w.expectedOutput = { sum: stepValue(input.salt, 0), spawned: sumSteps(si.salt, 0, si.steps) };
  w.expectedKinds = { step: 3 };
  return [w, spawned];
}

const EDGE_SHAPES = new Set<Shape>(['chain', 'reuse', 'busycancel', 'spawner', 'cancelcleanup']);

/** Its cleanup steps (c0.., a sleep after c0) as the history records them after the cancel. */
export const cleanupOps = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => (i === 0 && n > 1 ? [`step:c${i}`, 'sleep:sleep'] : [`step:c${i}`])).flat();

/**
 * 'cancelcleanup': heartbeating steps (6 chunks of stepMs / 2 each, a heartbeat after each), the
 * first attempt of one of them stalling past its heartbeatTimeout half the time (the cancel then
 * comes that much later, so the retry resumes first); cancelled while one is in flight (or, on a
 * slow run, after the end), then 3 cleanup steps and a sleep.
 */
function planCancelCleanup(r: Rng, o: WorkloadOptions, w: PlannedWorkflow): void {
  const input = w.input;
  input.steps = Math.min(3, o.steps);
  input.chunks = 6;
  input.cleanupSteps = 3;
  input.stallStep = r() < 0.5 ? intBetween(r, 0, input.steps - 1) : -1;
  const stepMs = input.chunks * chunkMsOf(input);
  const stalled = input.stallStep >= 0 ? heartbeatTimeoutOf(input) + chunkMsOf(input) : 0;
  w.busyCancelAfterMs = intBetween(r, stepMs / 2, input.steps * stepMs) + stalled;
  w.allowedStatuses = ['completed', 'cancelled'];
  w.expectedOutput = { sum: sumSteps(input.salt, 0, input.steps) };
  w.expectedKinds = { step: input.steps };
}

/**
 * 'chain': `steps` runs (continue-as-new between them), `signals` adds and `updates` bumps sent in a
 * seeded order with short pauses, so they land around the switches; all must be counted once.
 */
function planChain(r: Rng, o: WorkloadOptions, w: PlannedWorkflow): void {
  const kinds = [...Array<'signal'>(o.signals).fill('signal'), ...Array<'update'>(o.updates).fill('update')];
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j], kinds[i]];
  }
  w.chainMessages = kinds.map((kind, k) => ({
    kind,
    token: `${w.id}:m${k}`,
    value: intBetween(r, 1, 1000),
    afterMs: intBetween(r, 0, o.stepMs * 2),
  }));
  w.input.rounds = o.steps;
  w.input.messages = kinds.length;
  const total = w.chainMessages.reduce((a, m) => a + m.value, 0);
  w.expectedOutput = { runs: o.steps, total, tokens: w.chainMessages.map((m) => m.token).sort() };
  // The last run's history: its step and the wait for the messages (deliveries counted from the messages).
  w.expectedKinds = { step: 1, condition: 1 };
}

/** Started by the driver (not by a workflow: children and spawned ones). */
export const isDriven = (w: PlannedWorkflow) => w.parentId === null && w.startedBy === null;

/** Every workflow the run will have: the W the harness starts plus the children they start. */
export function planWorkload(r: Rng, o: WorkloadOptions): PlannedWorkflow[] {
  const out: PlannedWorkflow[] = [];
  for (let i = 0; i < o.workflows; i++) out.push(...planOne(r, o, i, chooseShape(r, o)));
  return out;
}
