// Finding and repairing workflows: engine.describe, list, fork, retry and purge, and the CLI's
// repairs (docs/api.md "Repair", docs/retention.md).
import { WorkflowNotFoundError, WorkflowPurgeRefusedError } from '../common/errors.js';
import type { ListFilter, ListPage, WorkflowDescription } from '../common/types.js';
import { describeWorkflow, listWorkflows } from './inspect.js';
import type { ResolvedEngineOptions } from './options.js';
import { Repair, type ForkOptions, type RepairDependencies } from './repair.js';
import { WorkflowReplayer } from './replayer.js';
import { validateWorkflowId } from './validation.js';

export interface AdminCallDependencies extends RepairDependencies {
  options: ResolvedEngineOptions;
  /** Throws EngineDisposedError once the engine is disposed. */
  assertOpen(): void;
  /** Rejects when this engine may not run anything (not bootstrapped, disposed, deposed). */
  assertCanRun(): Promise<void>;
}

export class AdminCalls {
  private readonly repairs: Repair;

  constructor(private readonly deps: AdminCallDependencies) {
    this.repairs = new Repair(this.repairDependencies());
  }

  async describe(workflowId: string): Promise<WorkflowDescription> {
    this.deps.assertOpen();
    return describeWorkflow(this.deps.store, workflowId);
  }

  async list(filter: ListFilter): Promise<ListPage> {
    this.deps.assertOpen();
    return listWorkflows(this.deps.store, filter);
  }

  /** The forked workflow's id. */
  async fork(workflowId: string, opts: ForkOptions): Promise<string> {
    await this.deps.assertCanRun();
    return (await this.repairs.fork(workflowId, opts)).workflowId;
  }

  /** The retried workflow's id (the same, as its next run). */
  async retry(workflowId: string): Promise<string> {
    await this.deps.assertCanRun();
    return (await this.repairs.retry(workflowId)).workflowId;
  }

  /** Repairs checked against `workflows` (the app's code) rather than this engine's registry. */
  repairsWith(workflows: ConstructorParameters<typeof WorkflowReplayer>[0]): Repair {
    return new Repair(this.repairDependencies(), new WorkflowReplayer(workflows));
  }

  async purge(workflowId: string): Promise<void> {
    this.deps.assertOpen();
    validateWorkflowId(workflowId);
    await this.deps.assertCanRun();
    const out = await this.deps.store.workflows.purgeOne(workflowId);
    if (out === 'missing') throw new WorkflowNotFoundError(workflowId);
    if ('refused' in out) throw new WorkflowPurgeRefusedError(workflowId, out.refused, out.status);
    this.deps.options.metrics.workflowsPurged?.(out.purged);
  }

  private repairDependencies(): RepairDependencies {
    const { store, registry, runtime, ownership } = this.deps;
    return { store, registry, runtime, ownership };
  }
}
