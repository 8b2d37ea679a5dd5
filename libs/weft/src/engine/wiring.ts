// Builds the engine's parts and connects them: each part is given what it calls, and the calls
// back into parts built after it (the runtime asks the starter to start a child, admission asks
// the lifecycle whether it may admit) go through closures, which only run once the engine is built.
import { WorkflowNotRunningError } from '../common/errors.js';
import { resolveOwnership } from '../ownership/config.js';
import { createOwnershipPolicy } from '../ownership/create-policy.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { OpenedDatabase } from '../storage/data-source.js';
import { Payloads } from '../storage/payloads.js';
import { WorkflowStore } from '../storage/workflow-store.js';
import { AdminCalls } from './admin-calls.js';
import { AmbientTransactions } from './ambient/ambient-transactions.js';
import { BackgroundWork } from './background.js';
import { CallerTransactions } from './caller-transaction.js';
import { GroupCommitter } from './group-committer.js';
import { EngineLifecycle } from './lifecycle.js';
import { Messaging } from './messaging.js';
import { type ResolvedEngineOptions, resolveEngineOptions, type WeftEngineOptions } from './options.js';
import { QueueAdmission } from './queues/admission.js';
import { resolveQueues } from './queues/options.js';
import { QueueSlots } from './queues/slots.js';
import { WorkflowRegistry } from './registry.js';
import { ResultWait } from './result-wait.js';
import { Runtime } from './run/runtime.js';
import { WeftSchedules } from './schedules/schedules.js';
import { StartCalls } from './start-calls.js';
import { Starter } from './starter.js';
import { TalkWaiters } from './talk-waiters.js';
import { Transitions } from './transitions.js';
import { UpdateCalls } from './update-calls.js';

/** What WeftEngine is made of; its public methods call these. */
export interface EngineParts {
  options: ResolvedEngineOptions;
  store: WorkflowStore;
  registry: WorkflowRegistry;
  ownership: OwnershipPolicy;
  ambient: AmbientTransactions;
  callerTransactions: CallerTransactions;
  waiters: TalkWaiters;
  runtime: Runtime;
  transitions: Transitions;
  messaging: Messaging;
  queues: QueueAdmission;
  starter: Starter;
  schedules: WeftSchedules;
  starts: StartCalls;
  updates: UpdateCalls;
  admin: AdminCalls;
  results: ResultWait;
  background: BackgroundWork;
  lifecycle: EngineLifecycle;
}

/** `ownsDatabase`: dispose() closes `database` (WeftEngine.create opened it). */
export function wireEngine(database: OpenedDatabase, options: WeftEngineOptions, engineId: string, ownsDatabase: boolean): EngineParts {
  const resolved = resolveEngineOptions(options, engineId);
  const clock = resolved.clock;
  const registry = new WorkflowRegistry();
  const waiters = new TalkWaiters();
  const store = new WorkflowStore(database.sql, database.schema, () => clock.offsetMs(), new Payloads(options.codec));
  const ambient = new AmbientTransactions(options.ambientTransactions);
  const callerTransactions = new CallerTransactions({ dataSource: database.dataSource, via: database.sql }, ambient);
  // The policy calls back into the runtime only once the engine runs (bootstrap and after).
  const ownership = createOwnershipPolicy({
    sql: database.sql,
    schema: database.schema,
    engineId,
    config: resolveOwnership(options),
    logger: resolved.logger,
    metrics: options.metrics,
    onWarning: options.onWarning,
    runtime: {
      stopLive: (id) => runtime.stopLive(id),
      drive: (id) => runtime.drive(id),
      halt: () => runtime.halt(),
      registeredTypes: () => registry.names(),
      poll: () => messaging.poll(),
    },
  });
  const declared = resolveQueues(options.queues);
  const slots = new QueueSlots({ store, queues: declared, logger: resolved.logger, freed: (q) => queues.nudge(0, q) });
  const runtime: Runtime = new Runtime({
    slots,
    store,
    committer: new GroupCommitter(store),
    registry,
    options: resolved,
    ownership,
    children: {
      // A child is started also while this engine shuts down (it drains).
      start: (parentId, childId, type, input, seq, headers) => starter.startChild(parentId, childId, type, input, seq, headers),
      terminated: (id, children, endsSingleton) => {
        queues.ended(id); // a queued run's end frees its slot: admit the next one now
        // Its singleton key is free: the oldest start waiting for it fires now (undefined: an external end, not known).
        if (endsSingleton !== false) background.wakeSingletonWaiter(id);
        return !children || children.length ? transitions.closeChildren(id, children) : Promise.resolve();
      },
    },
    external: {
      start: (type, input, workflowId, headers) => starter.start({ type, input, opts: { workflowId }, headers }),
      cancel: (id, reason) =>
        transitions.cancel(id, reason).then(
          () => undefined,
          (err: unknown) => {
            // Already ended (by an earlier try of this very call, say): nothing left to cancel.
            if (!(err instanceof WorkflowNotRunningError)) throw err;
          },
        ),
      status: async (id) => (await store.workflows.get(id))?.status ?? null,
    },
    fireOwnTimer: (id, seq) => transitions.fireOwn(id, seq),
    ambient,
    handoff: {
      request: (queue) => queues.handoffRequest(queue),
      ended: (queue, fromId, h, sentAt) => queues.endCommitted(queue, fromId, h, sentAt),
    },
  });
  const transitions: Transitions = new Transitions({
    store,
    runtime,
    registry,
    ownership,
    logger: resolved.logger,
    enqueued: (queue) => queues.nudge(0, queue),
  });
  const messaging: Messaging = new Messaging({
    store,
    runtime,
    registry,
    options: resolved,
    sql: database.sql,
    ownership,
    isDisposed: () => lifecycle.isDisposed,
    waiters,
    queueFreed: (queue, engineId) => queues.freedElsewhere(queue, engineId),
  });
  const queues: QueueAdmission = new QueueAdmission({
    store,
    registry,
    ownership,
    runtime,
    options: resolved,
    queues: declared,
    slots,
    engineId,
    mayAdmit: () => lifecycle.mayStartWork,
  });
  const starter: Starter = new Starter({
    queues,
    store,
    registry,
    options: resolved,
    ownership,
    runtime,
    messaging,
    nudgeTimersAt: (at) => background.nudgeAt(at),
  });
  const schedules: WeftSchedules = new WeftSchedules({
    repo: store.schedules,
    workflows: store.workflows,
    starter,
    registry,
    options: resolved,
    cancel: async (id, reason) => void (await transitions.cancel(id, reason)),
    assertCanRun: () => lifecycle.assertCanRun(),
    assertOpen: () => lifecycle.assertOpen(),
    mayFire: () => lifecycle.mayStartWork,
  });
  const guards = { assertOpen: () => lifecycle.assertOpen(), assertCanRun: () => lifecycle.assertCanRun() };
  const starts = new StartCalls({ options: resolved, starter, callerTransactions, ...guards });
  const updates = new UpdateCalls({
    registry,
    options: resolved,
    starter,
    messaging,
    ...guards,
  });
  const admin = new AdminCalls({
    store,
    registry,
    runtime,
    ownership,
    options: resolved,
    ...guards,
  });
  const results = new ResultWait({ store, runtime, ...guards });
  const background: BackgroundWork = new BackgroundWork({
    database,
    store,
    options: resolved,
    ownership,
    runtime,
    transitions,
    schedules,
    queues,
    messaging,
  });
  const lifecycle: EngineLifecycle = new EngineLifecycle({
    engineId,
    options: resolved,
    ownership,
    runtime,
    transitions,
    messaging,
    schedules,
    queues,
    background,
    waiters,
    closeDatabase: ownsDatabase ? () => database.close() : undefined,
  });
  return {
    options: resolved,
    store,
    registry,
    ownership,
    ambient,
    callerTransactions,
    waiters,
    runtime,
    transitions,
    messaging,
    queues,
    starter,
    schedules,
    starts,
    updates,
    admin,
    results,
    background,
    lifecycle,
  };
}
