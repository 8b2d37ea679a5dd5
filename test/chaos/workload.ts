// The workload: W workflows of mixed shapes, planned from the seed, each with its expected
// terminal state, output and history shape, computed here independently of the workflow code.
import { childId, childInput, type ChaosInput } from '../../apps/worker/src/workflows.js';
import { intBetween, Rng } from './util.js';

export type Shape = 'steps' | 'sleepy' | 'signals' | 'updates' | 'parent' | 'child' | 'expiring' | 'delayed' | 'cancelrace' | 'suspendable';

export const SHAPES: Exclude<Shape, 'child'>[] = [
  'steps',
  'sleepy',
  'signals',
  'updates',
  'parent',
  'expiring',
  'delayed',
  'cancelrace',
  'suspendable',
];

export interface WorkloadOptions {
  workflows: number;
  steps: number;
  stepMs: number;
  sleepMs: number;
  signals: number;
  updates: number;
  children: number;
  /** Relative weights of the shapes (default: equal). */
  mix?: Partial<Record<Exclude<Shape, 'child'>, number>>;
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

function chooseShape(r: Rng, o: WorkloadOptions): Exclude<Shape, 'child'> {
  const weights = SHAPES.map((s) => o.mix?.[s] ?? 1);
  let x = r() * weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < SHAPES.length; i++) {
    x -= weights[i];
    if (x < 0) return SHAPES[i];
  }
  return 'steps';
}

function blank(id: string, shape: Shape, input: ChaosInput, parentId: string | null = null): PlannedWorkflow {
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
    allowedStatuses: ['completed'],
    expectedOutput: null,
    expectedKinds: {},
  };
}

function planOne(r: Rng, o: WorkloadOptions, index: number, shape: Exclude<Shape, 'child'>): PlannedWorkflow[] {
  const id = `wf${String(index).padStart(5, '0')}-${shape}`;
  const input: ChaosInput = { steps: o.steps, stepMs: o.stepMs, salt: intBetween(r, 1, 1_000_000), sleepMs: o.sleepMs };
  const w = blank(id, shape, input);
  const sum = sumSteps(input.salt, 0, o.steps);
  w.expectedKinds = { step: o.steps };
  if (shape === 'steps') w.expectedOutput = { sum };
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

/** Every workflow the run will have: the W the harness starts plus the children they start. */
export function planWorkload(r: Rng, o: WorkloadOptions): PlannedWorkflow[] {
  const out: PlannedWorkflow[] = [];
  for (let i = 0; i < o.workflows; i++) out.push(...planOne(r, o, i, chooseShape(r, o)));
  return out;
}
