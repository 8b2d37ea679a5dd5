// The workload: W workflows of mixed shapes, planned from the seed, each with its expected
// terminal state, output and history shape, computed here independently of the workflow code.
import { childId, childInput, type ChaosInput } from '../../apps/worker/src/workflows';
import { intBetween, Rng } from './util';

export type Shape = 'steps' | 'sleepy' | 'signals' | 'updates' | 'parent' | 'child';

export const SHAPES: Exclude<Shape, 'child'>[] = ['steps', 'sleepy', 'signals', 'updates', 'parent'];

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
