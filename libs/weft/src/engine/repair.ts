// engine.fork and engine.retry (docs/api.md "Repair", docs/decisions/0027): the history kept up to a
// step is first replayed on the current code (WorkflowReplayer); a divergence refuses the repair
// with the report and writes nothing. Then the kept part is written as a run that replays it and
// runs the rest live: on this engine when it can claim it, else on whichever engine does.
import { v7 as uuidv7 } from 'uuid';
import {
  ForkRefusedError,
  InvalidArgumentError,
  WorkflowAlreadyStartedError,
  WorkflowClaimUnavailableError,
  WorkflowNotFoundError,
  WorkflowNotRunningError,
} from '../common/errors.js';
import type { OperationRecord, WorkflowAttributes } from '../common/types.js';
import { WorkflowStatus } from '../common/types.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { WorkflowRow } from '../storage/types.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import { attributesBeforeHistory, mergeAttributes } from './attributes.js';
import type { WorkflowRegistry } from './registry.js';
import { WorkflowReplayer } from './replayer.js';
import type { Runtime } from './run/runtime.js';
import { validateName, validateWorkflowId } from './validation.js';

export interface ForkOptions {
  /** The first operation to run again: its seq, or the name of a step (its first occurrence). */
  fromStep: number | string;
  /** The new workflow's id (default: a generated UUIDv7). */
  workflowId?: string;
}

const FORK_OPTIONS = ['fromStep', 'workflowId'];
/** Kinds whose failure is "the failed step" that retry runs again. */
const STEP_KINDS = new Set(['step', 'transaction']);

export interface RepairDependencies {
  store: WorkflowStore;
  registry: WorkflowRegistry;
  runtime: Runtime;
  ownership: OwnershipPolicy;
}

export class Repair {
  /**
   * `checker`: the workflow types to check with when this engine does not run them (the CLI,
   * given the app's code with --workflows): the repaired run is then left to the engines that do.
   */
  constructor(
    private readonly deps: RepairDependencies,
    private readonly checker?: WorkflowReplayer,
  ) {}

  /** Runs the repaired run here (claimed, then driven), or leaves it `running` for an engine that runs its type. */
  private runsHere(type: string): boolean {
    return this.deps.registry.has(type);
  }

  /** A failed workflow goes on from its failed step as its next run; returns that run's number. */
  async retry(workflowId: string): Promise<{ workflowId: string; runNumber: number; fromSeq: number }> {
    validateWorkflowId(workflowId);
    const { row, history } = await this.read(workflowId);
    if (row.status !== WorkflowStatus.Failed) throw new WorkflowNotRunningError(workflowId, row.status, WorkflowStatus.Failed);
    const fromSeq = failedStepSeq(history);
    await this.check(row, history, fromSeq, 'retry');
    const here = this.runsHere(row.type);
    const claims = here ? this.deps.ownership.claims : NO_CLAIMS;
    await claims.claimForCommand(workflowId); // WorkflowClaimUnavailableError if held elsewhere
    const done = await this.deps.store.workflows.repair
      .retry(workflowId, row.version, { runNumber: row.runNumber, fromSeq })
      .catch(async (err: unknown) => {
        await claims.release(workflowId);
        throw err;
      });
    if (!done) {
      await claims.release(workflowId);
      const now = await this.deps.store.workflows.get(workflowId);
      throw new WorkflowNotRunningError(workflowId, now?.status ?? 'gone', WorkflowStatus.Failed);
    }
    if (here) await this.deps.runtime.drive(workflowId);
    return { workflowId, runNumber: done.runNumber, fromSeq };
  }

  /** A new workflow with `id`'s history before `fromStep`, running the rest on the current code. */
  async fork(sourceId: string, opts: ForkOptions): Promise<{ workflowId: string; fromSeq: number }> {
    validateWorkflowId(sourceId);
    checkForkOptions(opts);
    const newId = opts.workflowId === undefined ? uuidv7() : validateWorkflowId(opts.workflowId);
    const { row, history } = await this.read(sourceId);
    const fromSeq = forkSeq(history, opts.fromStep);
    const kept = await this.check(row, history, fromSeq, 'fork');
    const attributes = keptAttributes(row, history, kept);
    const { claims } = this.deps.ownership;
    const origin = { workflowId: sourceId, runNumber: row.runNumber, fromSeq };
    const here = this.runsHere(row.type);
    const forked = { type: row.type, input: row.input, workflowVersion: row.workflowVersion, attributes };
    if (!(await this.deps.store.workflows.repair.fork(newId, forked, origin, claims.childClaim === 'free'))) {
      const existing = await this.deps.store.workflows.get(newId);
      throw new WorkflowAlreadyStartedError(newId, existing?.status ?? 'running');
    }
    if (!here) return { workflowId: newId, fromSeq };
    try {
      await claims.claimForCommand(newId);
    } catch (err) {
      // Another engine took it first: it runs there.
      if (err instanceof WorkflowClaimUnavailableError) return { workflowId: newId, fromSeq };
      throw err;
    }
    await this.deps.runtime.drive(newId);
    return { workflowId: newId, fromSeq };
  }

  private async read(workflowId: string): Promise<{ row: WorkflowRow; history: OperationRecord[] }> {
    const row = await this.deps.store.workflows.get(workflowId);
    if (!row) throw new WorkflowNotFoundError(workflowId);
    if (!this.checker) this.deps.registry.get(row.type); // WorkflowTypeNotRegisteredError: the check needs its code
    return { row, history: await this.deps.store.operations.history(workflowId) };
  }

  /** The kept part (seq < fromSeq), replayed on the current code: a divergence refuses. */
  private async check(row: WorkflowRow, history: OperationRecord[], fromSeq: number, what: 'fork' | 'retry'): Promise<OperationRecord[]> {
    const kept = history.filter((op) => op.seq < fromSeq);
    const replayer = this.checker ?? new WorkflowReplayer(this.deps.registry.all());
    const report = await replayer.replay({ workflowId: row.id, type: row.type, input: row.input, runNumber: row.runNumber, history: kept });
    if (!report.ok) throw new ForkRefusedError(row.id, fromSeq, report, what, { cause: report.error });
    return kept;
  }
}

/** Claims of a run this engine leaves to others: none taken, none to release. */
const NO_CLAIMS = { claimForCommand: async () => undefined, release: async () => undefined };

function checkForkOptions(opts: ForkOptions): void {
  if (opts === null || typeof opts !== 'object') throw new InvalidArgumentError('fork options', 'must be an object with fromStep');
  const unknown = Object.keys(opts).filter((k) => !FORK_OPTIONS.includes(k));
  if (unknown.length)
    throw new InvalidArgumentError('fork options', `unknown option "${unknown[0]}"; the options are ${FORK_OPTIONS.join(', ')}`);
}

/** The seq fork runs again from: a seq up to one past the last, or a step name's first operation. */
function forkSeq(history: OperationRecord[], fromStep: unknown): number {
  const next = history.length ? Math.max(...history.map((op) => op.seq)) + 1 : 0;
  if (typeof fromStep === 'number') {
    if (!Number.isInteger(fromStep) || fromStep < 0 || fromStep > next)
      throw new InvalidArgumentError('fromStep', `must be a seq from 0 to ${next} (the history's next), or a step name`);
    return fromStep;
  }
  const name = validateName('fromStep', fromStep);
  const op = history.find((o) => STEP_KINDS.has(o.kind) && o.name === name);
  if (!op) throw new InvalidArgumentError('fromStep', `names no step of the history (step "${name.slice(0, 80)}" was never recorded)`);
  return op.seq;
}

/** Retry runs again from the last failed step; a run that failed in its own code, from its end. */
function failedStepSeq(history: OperationRecord[]): number {
  const failed = history.filter((op) => STEP_KINDS.has(op.kind) && op.status === 'failed');
  if (failed.length) return Math.max(...failed.map((op) => op.seq));
  return history.length ? Math.max(...history.map((op) => op.seq)) + 1 : 0;
}

/** The fork's attributes: the source run's start attributes with the kept setAttributes calls folded in. */
function keptAttributes(row: WorkflowRow, history: OperationRecord[], kept: OperationRecord[]): WorkflowAttributes {
  let attrs = attributesBeforeHistory(row.attributes, history);
  for (const op of kept) if (op.kind === 'setAttributes' && op.result) attrs = mergeAttributes(attrs, op.result);
  return attrs;
}
