// The start path: a start's row, its group-committed insert (with the claim and a
// signal-with-start's signal in the same statement), the id policy on an existing id, and the
// launch of the new run. Queues and schedules admit their workflows through here.
import { InvalidArgumentError, SingletonConflictError, WorkflowAlreadyStartedError } from '../common/errors.js';
import type { StartOptions, WorkflowDefinition } from '../common/types.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import { Batcher } from '../storage/batcher.js';
import type { InsertResult } from '../storage/repositories/workflow.repository.js';
import type { InsertWorkflow } from '../storage/types.js';
import type { Queryable } from '../storage/sql-client.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { Messaging } from './messaging.js';
import type { CallerTransaction } from './caller-transaction.js';
import type { QueueAdmission } from './queues/admission.js';
import { newRow, singletonOf } from './new-row.js';
import type { ResolvedEngineOptions } from './options.js';
import type { WorkflowRegistry } from './registry.js';
import type { Runtime } from './run/runtime.js';
import { validateName } from './validation.js';
import { isTerminal } from './transitions.js';
import { checkedHeaders, NO_HEADERS } from './interceptors.js';
import { WorkflowStatus } from '../common/types.js';

const ID_POLICIES = ['return-existing', 'reject-duplicate', 'start-new-if-terminal'];

export interface StarterDependencies {
  store: WorkflowStore;
  registry: WorkflowRegistry;
  options: ResolvedEngineOptions;
  ownership: OwnershipPolicy;
  runtime: Runtime;
  messaging: Messaging;
  /** Queues: a start's queue and priority, and the nudge that admits it soon. */
  queues: QueueAdmission;
  /** The timer loop should look no later than `at` (epoch ms): a delayed start or a deadline. */
  nudgeTimersAt(at: number): void;
}

export interface StartRequest {
  type: string;
  input: unknown;
  opts: StartOptions;
  /** signalWithStart's signal, validated and stored as JSON. */
  signal?: { name: string; payload: unknown };
  /** A child of a workflow in its own queue: it runs on its parent's slot, not queued behind it. */
  inParentSlot?: boolean;
  /** A child's start: the seq of the parent's startChild (which ended child is this start's own). */
  parentSeq?: number;
  /** A transactional start: written in the caller's transaction, launched once it commits. */
  tx?: CallerTransaction;
  /**
   * Headers handed down (a child's, ctx.startWorkflow's: the starting workflow's); null when it has
   * none. Given, the start hooks do not run; absent, they run and make them (docs/interceptors.md).
   */
  headers?: Record<string, string> | null;
}

export class Starter {
  /** Group commit of starts: concurrent start() calls share one insert statement. */
  private readonly batch: Batcher<InsertWorkflow, InsertResult>;

  constructor(private readonly deps: StarterDependencies) {
    this.batch = new Batcher(
      (rows) => deps.store.workflows.startMany(rows, deps.ownership.claims.claimer()),
      (row) => row.id,
      // gather: the starts of one turn share one insert (decision 0062); ordered: a burst larger
      // than one insert is written in order, each insert after the one before it committed
      { gather: true, ordered: true },
    );
  }

  /**
   * Writes the start (or applies the id policy to an existing id) and launches a new run; resolves
   * with the id. With start interceptors, inside their chain: the headers they leave are checked
   * before anything is written, and a hook that throws refuses the start.
   */
  start(req: StartRequest): Promise<string> {
    const chain = this.deps.options.interceptors?.start;
    if (!chain || req.headers !== undefined) return this.startChecked(req);
    const first = { workflowType: req.type, workflowId: req.opts?.workflowId, input: req.input, headers: NO_HEADERS };
    return chain(first, (i) => this.startChecked({ ...req, input: i.input, headers: checkedHeaders(i.headers) }));
  }

  private async startChecked({ type, input, opts, signal, inParentSlot, parentSeq, tx, headers }: StartRequest): Promise<string> {
    const { registry, options, ownership, messaging } = this.deps;
    const def = registry.get(validateName('workflow type', type)); // a bad name is a 400, not a 404 that echoes it
    const policy = opts.idPolicy ?? 'return-existing';
    if (!ID_POLICIES.includes(policy)) throw new InvalidArgumentError('idPolicy', `must be one of ${ID_POLICIES.join(', ')}`);
    const row = newRow(def.name, input, opts, options, inParentSlot ? null : this.deps.queues.startOf(opts, def, input));
    // The claim and the start signal go in the start's own statement (docs/decisions/0005).
    row.claim = ownership.claims.claimer() && row.status === WorkflowStatus.Running ? 'mine' : null;
    row.signal = signal ?? null;
    row.workflowVersion = def.version ?? null;
    row.traceContext = options.tracing.tracer.starterContext();
    row.headers = headers;
    if (row.debounce) return this.startDebounced(def, row, signal, tx);
    if (tx) return this.startIn(tx, def, row, opts, policy, signal);
    const sentAt = performance.now();
    const inserted = await this.insert(row, opts, signal);
    if ('other' in inserted) return inserted.other;
    const { res } = inserted;
    const admitted = res.inserted
      ? { version: res.version, runNumber: 1, claimEpoch: res.claimEpoch, signalId: res.signalId }
      : await this.admitExisting(row, res, policy, parentSeq);
    if (!admitted) {
      // The existing run goes on: the signal is for it.
      if (signal) await messaging.signal(row.id, signal.name, signal.payload);
      return row.id;
    }
    options.metrics.workflowStarted?.(def.name);
    this.launch(def, row, { ...admitted, sentAt }, signal);
    return row.id;
  }

  /**
   * A debounced start: one upsert opens the key's window or pushes its start later with this
   * input (docs/queues.md); every call of a window gets its workflow's id. The start itself is the
   * delayed-start fire's, on whichever engine takes its timer.
   */
  private async startDebounced(
    def: WorkflowDefinition,
    row: InsertWorkflow,
    signal: StartRequest['signal'],
    tx: CallerTransaction | undefined,
  ): Promise<string> {
    if (signal) throw new InvalidArgumentError('debounce', 'does not combine with signalWithStart');
    if (tx) {
      throw new InvalidArgumentError(
        'debounce',
        "does not combine with a caller's transaction (manager, or an ambient one): call it after the transaction commits",
      );
    }
    const res = await this.deps.store.debounce.start(row);
    if (res.inserted) this.deps.options.metrics.workflowStarted?.(def.name);
    this.deps.nudgeTimersAt(this.deps.options.clock.now() + res.startInMs);
    return res.id;
  }

  /** The start's insert: group-committed, or alone with a singleton key; `via` a caller's transaction. */
  private async insert(
    row: InsertWorkflow,
    opts: StartOptions,
    signal: StartRequest['signal'],
    via?: Queryable,
  ): Promise<{ res: InsertResult } | { other: string }> {
    if (row.singletonKey) return this.startSingleton(row, opts, signal, via);
    if (!via) return { res: await this.batch.submit(row) };
    const [res] = await this.deps.store.workflows.startMany([row], this.deps.ownership.claims.claimer(), via);
    return { res };
  }

  /**
   * A start with a singleton key: inserted, or another live workflow holds the key (`other`, its
   * id: its handle is returned, or the start refused), or the id exists (the id policy applies).
   * In a caller's transaction (`via`) the unique index makes a start that meets a key taken by
   * another open transaction wait for its outcome (docs/transactions.md).
   */
  private async startSingleton(
    row: InsertWorkflow,
    opts: StartOptions,
    signal: StartRequest['signal'],
    via?: Queryable,
  ): Promise<{ res: InsertResult } | { other: string }> {
    const { key, onConflict } = singletonOf(opts)!;
    if (signal) throw new InvalidArgumentError('singleton', 'does not combine with signalWithStart');
    if (onConflict === 'queue') return { res: await this.queueBehind(row, key, via) };
    const res = await this.deps.store.workflows.startSingleton(row, this.deps.ownership.claims.claimer(), via);
    if (res.inserted || res.id === row.id) return { res };
    if (onConflict === 'reject') throw new SingletonConflictError(key, res.id);
    return { other: res.id };
  }

  /**
   * onConflict 'queue': every start waits in line (pending, with a delayed-start timer due at once)
   * and its fire takes the key when no live workflow holds it and no older start waits for it: a
   * start that took a free key directly would overtake the line.
   */
  private async queueBehind(row: InsertWorkflow, key: string, via?: Queryable): Promise<InsertResult> {
    row.status = WorkflowStatus.Pending;
    row.startInMs ??= 0;
    const queued = await this.deps.store.singletonWaits.queueBehind(row, key, via);
    return { ...queued, claimEpoch: null, signalId: null };
  }

  /**
   * A start in the caller's transaction: its row is written there with a claim nobody holds, so
   * that it exists iff the transaction commits; on commit this engine claims and runs it (if this
   * process is gone by then, the reclaim scan or recovery of another engine does). A singleton
   * start takes its key in that transaction too, or returns (refuses with) the live holder.
   */
  private async startIn(
    tx: CallerTransaction,
    def: WorkflowDefinition,
    row: InsertWorkflow,
    opts: StartOptions,
    policy: string,
    signal?: { name: string; payload: unknown },
  ): Promise<string> {
    const { ownership, messaging } = this.deps;
    if (policy === 'start-new-if-terminal') {
      throw new InvalidArgumentError('idPolicy', "'start-new-if-terminal' is not available inside a caller's transaction (manager)");
    }
    row.claim = ownership.claims.childClaim;
    const inserted = await this.insert(row, opts, signal, tx.via);
    if ('other' in inserted) return inserted.other;
    const { res } = inserted;
    if (!res.inserted) {
      if (policy === 'reject-duplicate') throw new WorkflowAlreadyStartedError(row.id, res.status);
      if (signal) await messaging.signal(row.id, signal.name, signal.payload, tx);
      return row.id;
    }
    tx.onCommit(() => {
      this.deps.options.metrics.workflowStarted?.(def.name);
      this.launchCommitted(row);
    });
    return row.id;
  }

  /** A transactional start committed: its run is claimed here and driven (or waits for its timer or queue). */
  private launchCommitted(row: InsertWorkflow): void {
    const { ownership, runtime, options } = this.deps;
    if (row.deadlineInMs !== null) this.deps.nudgeTimersAt(options.clock.now() + row.deadlineInMs);
    if (row.startInMs !== null) return this.deps.nudgeTimersAt(options.clock.now() + row.startInMs);
    if (row.status === WorkflowStatus.Enqueued) return this.deps.queues.nudge();
    ownership.claims
      .claimForRecovery([row.id])
      .then((held) => (held.includes(row.id) ? runtime.drive(row.id) : undefined))
      .catch((err: unknown) =>
        options.logger.warn(
          `Workflow "${row.id}" could not be launched after its start committed (${(err as Error)?.message}); the reclaim scan or recovery runs it.`,
        ),
      );
  }

  /**
   * A child of a type this engine runs starts here; one only other engines run is stored
   * with a free claim, for their reclaim scan (ownership 'workflow-lease').
   */
  async startChild(
    parentId: string,
    childId: string,
    type: string,
    input: unknown,
    seq: number,
    headers: Record<string, string> | null,
  ): Promise<string> {
    const opts = { workflowId: childId, parentId, idPolicy: 'return-existing' as const };
    if (this.deps.registry.has(type))
      return this.start({ type, input, opts, inParentSlot: await this.inParentsQueue(parentId, type), parentSeq: seq, headers });
    const row = newRow(type, input, opts, this.deps.options);
    if (headers) row.headers = headers;
    row.claim = this.deps.ownership.claims.childClaim;
    await this.batch.submit(row);
    return childId;
  }

  /**
   * A child whose type is queued into the queue its parent holds a slot of runs on that slot: queued
   * behind its waiting parent it would never be admitted at concurrency 1 (docs/decisions/0017).
   */
  private async inParentsQueue(parentId: string, type: string): Promise<boolean> {
    const queue = this.deps.registry.get(type).queue;
    // Under releaseWhileWaiting the parent gives its slot back while it waits for the child, which
    // is then admitted as any other (on the parent's slot, it would hold none while the parent waits).
    if (queue === undefined || this.deps.queues.declared.get(queue)?.releaseWhileWaiting) return false;
    return (await this.deps.store.workflows.get(parentId))?.queue === queue;
  }

  /** The id exists: apply the id policy. Null means "return a handle to the existing one". */
  private async admitExisting(row: InsertWorkflow, res: { status: WorkflowStatus; version: number }, policy: string, parentSeq?: number) {
    if (policy === 'reject-duplicate') throw new WorkflowAlreadyStartedError(row.id, res.status);
    if (!isTerminal(res.status)) return null;
    // A child start that finds an ended workflow is this start repeated (a replay, or a takeover
    // of a run whose start was not recorded) when the child's end reached the parent after this
    // start's seq: still waiting, or taken later by this run. Restarting it would run its steps
    // again and delete its history. Otherwise it ended for an earlier run of the parent (a
    // continue-as-new, a restart, a purged id) or for an earlier start of this run: the parent
    // would wait for a notice that never comes, so it starts anew.
    const { messages } = this.deps.store;
    if (policy === 'return-existing' && (!row.parentId || (await messages.hasNoticeAfter(row.parentId, row.id, parentSeq ?? null))))
      return null;
    return this.deps.store.workflows.restart(row, res.version, this.deps.ownership.claims.claimer()); // null: someone else restarted it first
  }

  /** A new run was written: launch it here (with its claim and start signal) or wait for its timer. */
  private launch(
    def: WorkflowDefinition,
    row: InsertWorkflow,
    run: { version: number; runNumber: number; claimEpoch: string | null; signalId: string | null; sentAt: number },
    signal?: { name: string; payload: unknown },
  ): void {
    const { ownership, runtime } = this.deps;
    // A queued run is launched by its queue's admission, here or on another engine.
    if (row.startInMs !== null) this.deps.nudgeTimersAt(this.deps.options.clock.now() + row.startInMs);
    else if (row.status === WorkflowStatus.Enqueued) this.deps.queues.nudge(0, row.queue);
    else if (ownership.claims.adoptStartClaim(row.id, run.claimEpoch, run.sentAt)) {
      // Without the claim (another engine holds a row left under this id) the run is not launched
      // here: its holder or, once that expires, a reclaim scan drives it.
      const inbox = signal && run.signalId ? [{ id: run.signalId, kind: 'signal' as const, ...signal }] : [];
      // Launched from the start: the caller's active context is the run's parent span (tracing).
      this.deps.options.tracing.fromStart(() =>
        runtime.launchNew(
          {
            workflowId: row.id,
            definition: def,
            input: row.input,
            runNumber: run.runNumber,
            version: run.version,
            parentId: row.parentId,
            storedTimers: row.timers.length > 0,
            attributes: row.attributes,
            singleton: row.singletonKey !== undefined,
            headers: row.headers ?? null,
          },
          inbox,
        ),
      );
    }
    if (row.deadlineInMs !== null) this.deps.nudgeTimersAt(this.deps.options.clock.now() + row.deadlineInMs);
  }
}
