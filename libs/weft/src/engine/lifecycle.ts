// The engine's life: the ownership bootstrap, recovery and the background loops' start
// (bootstrap), the graceful shutdown (dispose), the guards every call passes (assertOpen,
// assertCanRun), and the health snapshot that reads this state.
import { EngineDisposedError, EngineLeaseNotHeldError, EngineNotReadyError } from '../common/errors.js';
import type { EngineHealthSnapshot } from '../common/types.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { BackgroundWork } from './background.js';
import type { Messaging } from './messaging.js';
import type { ResolvedEngineOptions } from './options.js';
import type { QueueAdmission } from './queues/admission.js';
import type { Runtime } from './run/runtime.js';
import type { WeftSchedules } from './schedules/schedules.js';
import type { TalkWaiters } from './talk-waiters.js';
import type { Transitions } from './transitions.js';

export interface LifecycleDependencies {
  engineId: string;
  options: ResolvedEngineOptions;
  ownership: OwnershipPolicy;
  runtime: Runtime;
  transitions: Transitions;
  messaging: Messaging;
  schedules: WeftSchedules;
  queues: QueueAdmission;
  background: BackgroundWork;
  waiters: TalkWaiters;
  /** Closes the database at the end of dispose(): set when the engine opened it (WeftEngine.create). */
  closeDatabase?: () => Promise<void>;
}

export class EngineLifecycle {
  private disposed: Promise<{ released: number; failed: number }> | undefined;
  private started = false;
  private bootstrapping: Promise<void> | undefined;
  private ownershipReady: Promise<void> | undefined;

  constructor(private readonly deps: LifecycleDependencies) {}

  get isDisposed(): boolean {
    return this.disposed !== undefined;
  }

  /** Not disposed, not draining, not deposed, and allowed by the ownership gate: admissions and schedule fires go on. */
  get mayStartWork(): boolean {
    const { runtime, ownership } = this.deps;
    return !this.disposed && !runtime.isDraining && !ownership.gate.isHalted && ownership.gate.mayRunAnything();
  }

  /**
   * Ownership bootstrap (gates, lease), then recovery of running workflows, then the
   * background loops (unless backgroundTasks is 'manual').
   */
  async bootstrap(): Promise<void> {
    const { ownership, options, background, schedules, messaging, queues } = this.deps;
    this.assertOpen();
    if (this.bootstrapping) return this.bootstrapping;
    this.ownershipReady = ownership.maintenance.bootstrap();
    this.ownershipReady.catch(() => undefined);
    this.bootstrapping = (async () => {
      await this.ownershipReady;
      await background.refreshPlans(true); // the tables' sizes now: later growth is measured from here
      await options.tracing.ready(); // before recovery, so recovered runs are traced
      await schedules.syncDeclared();
      const auto = options.backgroundTasks === 'auto';
      if (options.notify && auto) await messaging.listen();
      // Renewal first: a recovery that claims thousands of workflows takes longer than a TTL.
      if (auto && !this.disposed) ownership.maintenance.start();
      await this.recoverAll();
      if (auto && !this.disposed) background.start();
      if (auto && !this.disposed) queues.start();
      this.started = true;
    })();
    return this.bootstrapping;
  }

  /** Starts bootstrap() and resolves once its ownership bootstrap has passed (see WeftEngine.bootstrapGates). */
  async bootstrapGates(): Promise<{ recovery: Promise<void> }> {
    const recovery = this.bootstrap();
    recovery.catch(() => undefined); // the caller handles it through `recovery`
    await (this.ownershipReady ?? recovery);
    return { recovery };
  }

  /** Replays and continues every running workflow of a registered type not already live here. */
  async recoverAll(): Promise<{ recovered: number }> {
    this.assertOpen();
    return this.deps.transitions.recoverAll();
  }

  /** The graceful shutdown WeftEngine.dispose describes; once. */
  dispose(): Promise<{ released: number; failed: number }> {
    const { runtime, waiters, ownership, background, queues, messaging, transitions, options, closeDatabase } = this.deps;
    this.disposed ??= (async () => {
      runtime.beginDrain();
      waiters.wakeAll(); // getEvent and readStream callers end now, before the database closes
      await ownership.maintenance.stop();
      await background.stop();
      await queues.stop();
      await messaging.close();
      await this.bootstrapping?.catch(() => undefined);
      await runtime.drain(Date.now() + options.shutdownGraceMs);
      await runtime.close();
      await transitions.putBackTaken().catch(() => undefined); // before the claims go: see there
      const report = await ownership.maintenance.dispose().catch(() => ({ released: 0, failed: -1 }));
      if (closeDatabase) await closeDatabase();
      return report;
    })();
    return this.disposed;
  }

  /** What health checks need; cheap, no I/O. */
  healthSnapshot(): EngineHealthSnapshot {
    const { engineId, ownership, options, background, runtime, queues } = this.deps;
    const { halted, claimsHeld, renewalFailures, lastPassAt, intervalMs } = ownership.figures();
    return {
      engineId,
      ownership: ownership.mode,
      bootstrapped: this.started,
      disposed: this.disposed !== undefined,
      halted,
      backgroundTasks: options.backgroundTasks,
      lastBackgroundPassAt: lastPassAt === undefined ? background.lastPassAt : lastPassAt,
      backgroundIntervalMs: intervalMs ?? options.timerPollMs,
      liveWorkflows: runtime.liveCount,
      claimsHeld,
      renewalFailures,
      queues: queues.snapshot(),
    };
  }

  /**
   * Fencing modes: nothing runs before the ownership bootstrap (gates, lease) has succeeded; a
   * call made while it is under way waits for it. Under 'lease' only the holder runs anything.
   */
  async assertCanRun(): Promise<void> {
    const { ownership, engineId } = this.deps;
    this.assertOpen();
    if (!ownership.maintenance.requiresBootstrap) return;
    if (!this.ownershipReady)
      throw new EngineNotReadyError(engineId, 'call engine.bootstrap() first (WeftModule does it at application bootstrap)');
    await this.ownershipReady.catch((err: Error) => {
      if (err instanceof EngineLeaseNotHeldError) throw err;
      throw new EngineNotReadyError(engineId, `its ownership bootstrap failed: ${err.message}`, { cause: err });
    });
    if (!ownership.gate.mayRunAnything()) throw new EngineLeaseNotHeldError(engineId, null);
  }

  /** Throws EngineDisposedError once dispose() was called. */
  assertOpen(): void {
    if (this.disposed) throw new EngineDisposedError();
  }
}
