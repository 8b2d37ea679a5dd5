// The chaos workflow types. Every step body appends to the side-effect ledger (ledger.ts) and
// returns a value that depends only on the input, so the harness can compute every workflow's
// expected output without running it. Signal and update handlers de-duplicate by token: a client
// that retries a send it could not confirm never changes the outcome.
import {
  currentStep,
  WorkflowCancelledError,
  type StepOptions,
  type WeftEngine,
  type WorkflowContext,
  type WorkflowDefinition,
} from '@weft/nest';
import type { Ledger } from './ledger.js';

export interface ChaosInput {
  steps: number;
  stepMs: number;
  salt: number;
  sleepMs?: number;
  signals?: number;
  updates?: number;
  children?: number;
  /** 'chain': how many runs (continue-as-new rounds), the messages it waits for, and the state carried. */
  rounds?: number;
  messages?: number;
  carried?: ChainState;
  /** 'reuse': which start of the same id this is (1, then 2 after the purge). */
  gen?: number;
  /** 'cancelcleanup': heartbeats per long step, its cleanup steps, and the step whose first attempt stalls past its heartbeatTimeout (-1: none). */
  chunks?: number;
  cleanupSteps?: number;
  stallStep?: number;
}

/** What step `i` of a workflow with this salt returns: the harness computes the same. */
export const stepValue = (salt: number, i: number) => salt + 7 * (i + 1);

/** Rides out PostgreSQL restarts: the ledger write fails while the server is down. */
const STEP_OPTIONS: StepOptions = { retry: { maxAttempts: 40, initialInterval: 100, backoffCoefficient: 2, maxInterval: 2000 } };

let ledger: Ledger | undefined;
let engine: WeftEngine | undefined;
/** idempotencyKey -> when this process started the step's first attempt (cleared when an attempt succeeds). */
const firstAttemptAt = new Map<string, number>();

export function useLedger(l: Ledger): void {
  ledger = l;
}

/** The engine a step body starts workflows with ('chaos.spawner'), as application code would. */
export function useEngine(e: WeftEngine): void {
  engine = e;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** One ledgered step: returns its deterministic value; the recorded result also names its ledger row. */
async function ledgerStep(ctx: WorkflowContext, input: ChaosInput, i: number): Promise<number> {
  const r = await ctx.step(
    `s${i}`,
    async ({ attempt, idempotencyKey, signal }) => {
      const bodyStartedMs = Date.now();
      if (attempt === 1 || !firstAttemptAt.has(idempotencyKey)) firstAttemptAt.set(idempotencyKey, bodyStartedMs);
      const stepStartedMs = firstAttemptAt.get(idempotencyKey)!;
      const seq = Number(idempotencyKey.slice(idempotencyKey.lastIndexOf(':') + 1));
      // No ledger without DATABASE_URL (embedded database): the steps still run, unrecorded.
      const entry = { workflowId: ctx.workflowId, seq, step: `s${i}`, attempt, bodyStartedMs, stepStartedMs };
      const lid = ledger ? await ledger.append(entry) : null;
      await pause(input.stepMs / 2 + Math.random() * input.stepMs, signal);
      firstAttemptAt.delete(idempotencyKey);
      // End-of-body mark: this body finished (and whether the engine had aborted it by then).
      if (lid !== null) ledger?.finish(lid, Date.now(), signal.aborted);
      return { v: stepValue(input.salt, i), lid };
    },
    STEP_OPTIONS,
  );
  return r.v;
}

/**
 * One ledgered transactional step ('chaos.txsteps'): the ledger row goes through the worker's pool
 * (outside the transaction: it shows every body that ran), the application row through the step's
 * transaction, which commits it with the step's record or not at all.
 */
async function transactionalStep(ctx: WorkflowContext, input: ChaosInput, i: number): Promise<number> {
  const r = await ctx.transaction(
    `s${i}`,
    async (manager, { attempt, idempotencyKey, signal }) => {
      const bodyStartedMs = Date.now();
      if (attempt === 1 || !firstAttemptAt.has(idempotencyKey)) firstAttemptAt.set(idempotencyKey, bodyStartedMs);
      const stepStartedMs = firstAttemptAt.get(idempotencyKey)!;
      const seq = Number(idempotencyKey.slice(idempotencyKey.lastIndexOf(':') + 1));
      const entry = { workflowId: ctx.workflowId, seq, step: `s${i}`, attempt, bodyStartedMs, stepStartedMs };
      const lid = ledger ? await ledger.append(entry) : null;
      if (ledger && lid !== null) await ledger.writeTxRow(manager, ctx.workflowId, seq, lid);
      await pause(input.stepMs / 2 + Math.random() * input.stepMs, signal);
      firstAttemptAt.delete(idempotencyKey);
      if (lid !== null) ledger?.finish(lid, Date.now(), signal.aborted);
      return { v: stepValue(input.salt, i), lid };
    },
    STEP_OPTIONS,
  );
  return r.v;
}

/** 'cancelcleanup': how long one chunk of a heartbeating step takes, and its heartbeatTimeout (the harness plans around both). */
export const chunkMsOf = (input: ChaosInput) => Math.max(20, Math.round(input.stepMs / 2));
export const heartbeatTimeoutOf = (input: ChaosInput) => Math.max(1000, chunkMsOf(input) * 10);

/** Progress a heartbeating step saves: the last chunk it finished. */
interface Progress {
  done: number;
}

/**
 * One ledgered heartbeating step ('chaos.cancelcleanup'): `chunks` pauses, a heartbeat after each;
 * a retry (after a kill, a heartbeat timeout, a failed ledger write) resumes after the chunk its
 * `lastHeartbeat` names, and its ledger row says where it resumed (`progressFrom`: the harness
 * checks it is never behind a heartbeat recorded before). The first attempt of `stallStep` stalls
 * past its heartbeatTimeout once, so the engine aborts it and retries it from its heartbeat.
 */
async function heartbeatingStep(ctx: WorkflowContext, input: ChaosInput, name: string, i: number): Promise<number> {
  const chunks = input.chunks ?? 4;
  const chunkMs = chunkMsOf(input);
  const heartbeatTimeout = heartbeatTimeoutOf(input);
  const r = await ctx.step(
    name,
    async ({ attempt, idempotencyKey, signal }) => {
      const bodyStartedMs = Date.now();
      if (attempt === 1 || !firstAttemptAt.has(idempotencyKey)) firstAttemptAt.set(idempotencyKey, bodyStartedMs);
      const stepStartedMs = firstAttemptAt.get(idempotencyKey)!;
      const seq = Number(idempotencyKey.slice(idempotencyKey.lastIndexOf(':') + 1));
      const step = currentStep()!;
      const from = (step.lastHeartbeat as Progress | undefined)?.done ?? -1;
      const entry = { workflowId: ctx.workflowId, seq, step: name, attempt, bodyStartedMs, stepStartedMs, progressFrom: from };
      const lid = ledger ? await ledger.append(entry) : null;
      for (let k = from + 1; k < chunks; k++) {
        const stall = name === `s${input.stallStep ?? -1}` && attempt === 1 && k === 1;
        await pause(stall ? heartbeatTimeout * 3 : chunkMs, signal);
        // Aborted (a cancel, its heartbeat timeout, a lost claim): nothing more to do, no end-of-body mark.
        if (signal.aborted) throw new Error(`chunk ${k} of ${name} aborted`);
        step.heartbeat({ done: k } satisfies Progress);
      }
      firstAttemptAt.delete(idempotencyKey);
      if (lid !== null) ledger?.finish(lid, Date.now(), signal.aborted);
      return { v: stepValue(input.salt, i), lid };
    },
    { ...STEP_OPTIONS, heartbeatTimeout },
  );
  return r.v;
}

async function steps(ctx: WorkflowContext, input: ChaosInput, from: number, to: number): Promise<number> {
  let sum = 0;
  for (let i = from; i < to; i++) sum += await ledgerStep(ctx, input, i);
  return sum;
}

const WAIT = { timeout: '30m' } as const;

/** Steps only. */
class StepsWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    return { sum: await steps(ctx, input, 0, input.steps) };
  }
}

/** Transactional steps only, each writing its application row in its own transaction. */
class TxStepsWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    let sum = 0;
    for (let i = 0; i < input.steps; i++) sum += await transactionalStep(ctx, input, i);
    return { sum };
  }
}

/** Steps with durable sleeps between them and a condition that must time out. */
class SleepyWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    const sleepMs = input.sleepMs ?? 500;
    let sum = 0;
    let timedOut = false;
    for (let i = 0; i < input.steps; i++) {
      sum += await ledgerStep(ctx, input, i);
      if (i === 1) timedOut = !(await ctx.condition(() => false, { timeout: sleepMs }));
      else if (i % 2 === 0 && i < input.steps - 1) await ctx.sleep(sleepMs);
    }
    return { sum, timedOut };
  }
}

/** Signals with a handler ('add'), a condition over them, then waitForSignal('finish'). */
class SignalsWorkflow {
  private readonly tokens = new Set<string>();
  private total = 0;

  onAdd(p: { token: string; value: number }) {
    if (this.tokens.has(p.token)) return;
    this.tokens.add(p.token);
    this.total += p.value;
  }

  status() {
    return { count: this.tokens.size, total: this.total };
  }

  async run(ctx: WorkflowContext, input: ChaosInput) {
    const half = Math.floor(input.steps / 2);
    let sum = await steps(ctx, input, 0, half);
    if (!(await ctx.condition(() => this.tokens.size >= (input.signals ?? 0), WAIT))) throw new Error('signals never came');
    const finish = await ctx.waitForSignal<{ value: number }>('finish', WAIT);
    if (!finish) throw new Error('finish never came');
    sum += await steps(ctx, input, half, input.steps);
    return { sum, count: this.tokens.size, total: this.total, finish: finish.value };
  }
}

/** Updates ('bump' returns the counter after the bump), a condition over them, queries. */
class UpdatesWorkflow {
  private readonly seen = new Map<string, number>();
  private counter = 0;

  bump(a: { token: string }) {
    const known = this.seen.get(a.token);
    if (known !== undefined) return known;
    this.counter += 1;
    this.seen.set(a.token, this.counter);
    return this.counter;
  }

  status() {
    return { counter: this.counter };
  }

  async run(ctx: WorkflowContext, input: ChaosInput) {
    const half = Math.floor(input.steps / 2);
    let sum = await steps(ctx, input, 0, half);
    if (!(await ctx.condition(() => this.counter >= (input.updates ?? 0), WAIT))) throw new Error('updates never came');
    sum += await steps(ctx, input, half, input.steps);
    return { sum, counter: this.counter };
  }
}

/**
 * Updates whose callers give up: the client sends 'bump' with a short timeout while the workflow
 * is busy in a (longer) step, so some requests expire in the inbox before any delivery point;
 * then 'finish'. The output counts the updates that were applied (the harness reads which from
 * weft_messages: status 'done' vs 'expired').
 */
class ExpiringUpdatesWorkflow extends UpdatesWorkflow {
  override async run(ctx: WorkflowContext, input: ChaosInput) {
    const half = Math.floor(input.steps / 2);
    let sum = await steps(ctx, input, 0, half);
    const finish = await ctx.waitForSignal<{ value: number }>('finish', WAIT);
    if (!finish) throw new Error('finish never came');
    sum += await steps(ctx, input, half, input.steps);
    return { sum, counter: this.status().counter, finish: finish.value };
  }
}

export const childInput = (parent: ChaosInput, j: number): ChaosInput => ({
  steps: 2,
  stepMs: parent.stepMs,
  salt: parent.salt + 1000 * (j + 1),
  sleepMs: parent.sleepMs,
});

export const childId = (parentId: string, j: number) => `${parentId}.c${j}`;

/** Children started together, awaited together (they may run on other engines). */
class ParentWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    let sum = await ledgerStep(ctx, input, 0);
    const handles = [];
    for (let j = 0; j < (input.children ?? 2); j++) {
      handles.push(await ctx.startChild<{ sum: number }>('chaos.child', childInput(input, j), { workflowId: childId(ctx.workflowId, j) }));
    }
    const outs = await Promise.all(handles.map((h) => h.result()));
    sum += await steps(ctx, input, 1, input.steps);
    return { sum, children: outs.map((o) => o.sum) };
  }
}

/** A child: a step, a durable sleep, a step. */
class ChildWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    let sum = await ledgerStep(ctx, input, 0);
    await ctx.sleep(input.sleepMs ?? 300);
    sum += await steps(ctx, input, 1, input.steps);
    return { sum };
  }
}

/** What a 'chain' carries from run to run: each applied token's value, and every delivery. */
export interface ChainState {
  round: number;
  values: Record<string, number>;
  /** Deliveries per token, duplicates included: the harness checks none was applied twice. */
  deliveries: Record<string, number>;
}

const freshChain = (): ChainState => ({ round: 0, values: {}, deliveries: {} });

/**
 * Continues as new `rounds - 1` times (one short, unledgered step per run), carrying its state,
 * while the client sends signals 'add' and updates 'bump' timed around the switches; the last run
 * waits until every message arrived. Each is applied once (by token) and counted in the output.
 */
class ChainWorkflow {
  // Initialised here, not only in run(): a first run recovered before it began gets its pending
  // messages before run() (docs/messages.md), and run() merges them into what it carries.
  private state = freshChain();

  private take(p: { token: string; value: number }): number {
    this.state.deliveries[p.token] = (this.state.deliveries[p.token] ?? 0) + 1;
    this.state.values[p.token] ??= p.value;
    return Object.keys(this.state.values).length;
  }

  onAdd(p: { token: string; value: number }) {
    this.take(p);
  }

  bump(p: { token: string; value: number }) {
    return this.take(p);
  }

  status() {
    return { round: this.state.round, count: Object.keys(this.state.values).length };
  }

  async run(ctx: WorkflowContext, input: ChaosInput) {
    const early = this.state;
    const c = input.carried ?? freshChain();
    this.state = { round: c.round, values: { ...c.values }, deliveries: { ...c.deliveries } };
    for (const [t, n] of Object.entries(early.deliveries)) {
      this.state.deliveries[t] = (this.state.deliveries[t] ?? 0) + n;
      this.state.values[t] ??= early.values[t];
    }
    const round = this.state.round;
    await ctx.step(`r${round}`, ({ signal }) => pause(input.stepMs / 2 + Math.random() * input.stepMs, signal).then(() => round));
    const got = () => Object.keys(this.state.values).length;
    if (round + 1 < (input.rounds ?? 1)) {
      // A short wait where messages are delivered in this run; the rest are carried to the next.
      if (round % 2 === 1) await ctx.condition(() => got() >= (input.messages ?? 0), { timeout: input.stepMs / 2 });
      return ctx.continueAsNew({ ...input, carried: { ...this.state, round: round + 1 } });
    }
    if (!(await ctx.condition(() => got() >= (input.messages ?? 0), WAIT))) throw new Error('messages never came');
    const total = Object.values(this.state.values).reduce((a, b) => a + b, 0);
    return { runs: ctx.runNumber, total, tokens: Object.keys(this.state.values).sort(), deliveries: this.state.deliveries };
  }
}

export const spawnedId = (spawnerId: string) => `${spawnerId}.spawned`;
export const spawnedInput = (input: ChaosInput): ChaosInput => ({ steps: 2, stepMs: input.stepMs, salt: input.salt + 500_000 });

/** Outlasts a restarting database and a result that takes a while (each try waits 20 s). */
const SPAWN_OPTIONS: StepOptions = { retry: { maxAttempts: 100, initialInterval: 100, backoffCoefficient: 2, maxInterval: 2000 } };

/**
 * A step body starts another workflow through the engine (not a child: it outlives this one), a
 * second step waits for its result; the first step is ledgered as usual.
 */
class SpawnerWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    const sum = await ledgerStep(ctx, input, 0);
    const id = spawnedId(ctx.workflowId);
    await ctx.step(
      'spawn',
      async () => (await engine!.start('chaos.steps', spawnedInput(input), { workflowId: id })).workflowId,
      SPAWN_OPTIONS,
    );
    const out = await ctx.step('await', () => engine!.result<{ sum: number }>(id, { timeout: '20s' }), SPAWN_OPTIONS);
    return { sum, spawned: out.sum };
  }
}

/**
 * Long heartbeating steps s0..; a cancel (sent through a random engine while one runs) lands as
 * WorkflowCancelledError, and the cleanup runs shielded: heartbeating steps c0.., with a short
 * durable sleep after the first, then the cancel goes on (the workflow ends `cancelled`). Faults
 * hit the cleanup too: the next owner replays it and finishes it, each cleanup step recorded once.
 */
class CancelCleanupWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    let sum = 0;
    try {
      for (let i = 0; i < input.steps; i++) sum += await heartbeatingStep(ctx, input, `s${i}`, i);
      return { sum };
    } catch (err) {
      if (!(err instanceof WorkflowCancelledError)) throw err;
      await ctx.nonCancellable(async () => {
        for (let i = 0; i < (input.cleanupSteps ?? 2); i++) {
          await heartbeatingStep(ctx, input, `c${i}`, i);
          if (i === 0) await ctx.sleep(Math.round((input.sleepMs ?? 300) / 2));
        }
      });
      throw err;
    }
  }
}

/**
 * Started, purged once it completed, started again under the same id ('reuse'): unledgered steps
 * (the two starts' steps share seqs); the output names the start and its run number.
 */
class ReuseWorkflow {
  async run(ctx: WorkflowContext, input: ChaosInput) {
    let sum = 0;
    for (let i = 0; i < input.steps; i++) {
      sum += await ctx.step(`s${i}`, ({ signal }) => pause(input.stepMs / 2, signal).then(() => stepValue(input.salt, i)), STEP_OPTIONS);
    }
    return { sum, gen: input.gen ?? 1, run: ctx.runNumber };
  }
}

export const CHAOS_WORKFLOWS: WorkflowDefinition[] = [
  { name: 'chaos.steps', factory: () => new StepsWorkflow() },
  { name: 'chaos.sleepy', factory: () => new SleepyWorkflow() },
  { name: 'chaos.txsteps', factory: () => new TxStepsWorkflow() },
  {
    name: 'chaos.signals',
    factory: () => new SignalsWorkflow(),
    signalHandlers: { add: 'onAdd' },
    queryHandlers: { status: 'status' },
  },
  {
    name: 'chaos.updates',
    factory: () => new UpdatesWorkflow(),
    updateHandlers: { bump: 'bump' },
    queryHandlers: { status: 'status' },
  },
  {
    name: 'chaos.expiring',
    factory: () => new ExpiringUpdatesWorkflow(),
    updateHandlers: { bump: 'bump' },
    queryHandlers: { status: 'status' },
  },
  // Steps only, started with startAfter (delayed start), raced by a cancel from another engine,
  // or suspended and resumed through a random engine: the shape is in the client's calls.
  { name: 'chaos.delayed', factory: () => new StepsWorkflow() },
  { name: 'chaos.cancelrace', factory: () => new StepsWorkflow() },
  { name: 'chaos.suspendable', factory: () => new StepsWorkflow() },
  // Long steps, cancelled through a random engine while one is in flight.
  { name: 'chaos.busycancel', factory: () => new StepsWorkflow() },
  // Heartbeating steps, cancelled while one runs; its cleanup (steps, a sleep) runs shielded.
  { name: 'chaos.cancelcleanup', factory: () => new CancelCleanupWorkflow() },
  {
    name: 'chaos.chain',
    factory: () => new ChainWorkflow(),
    signalHandlers: { add: 'onAdd' },
    updateHandlers: { bump: 'bump' },
    queryHandlers: { status: 'status' },
  },
  { name: 'chaos.spawner', factory: () => new SpawnerWorkflow() },
  { name: 'chaos.reuse', factory: () => new ReuseWorkflow() },
  { name: 'chaos.parent', factory: () => new ParentWorkflow() },
  { name: 'chaos.child', factory: () => new ChildWorkflow() },
];
