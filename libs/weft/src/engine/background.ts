// The engine's background work: the timer loop's tick (due timers, schedules, retention, the
// plans' freshness, and the owner-side poll when the ownership policy runs no pass of its own),
// runMaintenance for backgroundTasks 'manual', and what the testing kit's clock asks of it.
import type { PassReport } from '../ownership/renewal-scheduler.js';
import type { OwnershipPolicy } from '../ownership/policy.js';
import type { OpenedDatabase } from '../storage/data-source.js';
import { PlanFreshness } from '../storage/plan-freshness.js';
import type { WorkflowStore } from '../storage/workflow-store.js';
import type { Messaging } from './messaging.js';
import type { ResolvedEngineOptions } from './options.js';
import type { QueueAdmission } from './queues/admission.js';
import { Retention } from './retention.js';
import type { Runtime } from './run/runtime.js';
import type { WeftSchedules } from './schedules/schedules.js';
import { TimerLoop } from './timer-loop.js';
import type { Transitions } from './transitions.js';

export interface BackgroundDependencies {
  database: Pick<OpenedDatabase, 'sql' | 'schema'>;
  store: WorkflowStore;
  options: ResolvedEngineOptions;
  ownership: OwnershipPolicy;
  runtime: Runtime;
  transitions: Transitions;
  schedules: WeftSchedules;
  queues: QueueAdmission;
  messaging: Messaging;
}

/** What one round of runMaintenance did. */
export interface MaintenanceReport {
  pass: PassReport | null;
  timersFired: number;
  schedulesFired: number;
  purged: number;
  admitted: number;
}

export class BackgroundWork {
  private readonly timers: TimerLoop;
  private readonly retention: Retention;
  private readonly plans: PlanFreshness;
  private passAt: Date | null = null;

  constructor(private readonly deps: BackgroundDependencies) {
    const { database, store, options } = deps;
    this.retention = new Retention({ workflows: store.workflows, sql: database.sql, options });
    this.plans = new PlanFreshness(database.sql, database.schema);
    this.timers = new TimerLoop(
      () => this.tick(),
      options.timerPollMs,
      (err) => options.logger.warn(`Timer poll failed: ${(err as Error).message}`),
      options.clock,
    );
  }

  /** When the last background pass began (this engine's own; the ownership policy's pass reports its own). */
  get lastPassAt(): Date | null {
    return this.passAt;
  }

  /** The timer loop (backgroundTasks 'auto'). */
  start(): void {
    this.timers.start();
  }

  async stop(): Promise<void> {
    await this.timers.stop();
  }

  /** Makes sure a tick runs at or soon after `at` (epoch ms, workflow time). */
  nudgeAt(at: number): void {
    this.timers.nudgeAt(at);
  }

  /** A workflow that may have held a singleton key ended here: the start waiting for it fires now, not at its recheck. */
  wakeSingletonWaiter(workflowId: string): void {
    const { store, options } = this.deps;
    void store.singletonWaits.wakeNext(workflowId).then(
      (woke) => woke && this.timers.nudgeAt(options.clock.now()),
      (err: unknown) =>
        options.logger.warn(`A queued singleton start could not be woken (its recheck starts it): ${(err as Error).message}`),
    );
  }

  /**
   * Cached plans follow the tables' growth (storage/plan-freshness.ts). A failed read of the
   * sizes only postpones that: the statements still run.
   */
  async refreshPlans(now = false): Promise<void> {
    await (now ? this.plans.refresh() : this.plans.maybeRefresh()).catch((err) =>
      this.deps.options.logger.warn(`Reading the table sizes failed: ${(err as Error).message}`),
    );
  }

  /** One round of background work (for backgroundTasks 'manual'): renewal, reclaim, polls, due timers. */
  async runMaintenance(): Promise<MaintenanceReport> {
    const { ownership, transitions, schedules, queues, messaging } = this.deps;
    const pass = await ownership.maintenance.runPass();
    this.passAt = new Date();
    const timersFired = ownership.gate.isHalted ? 0 : await transitions.processDueTimers();
    const schedulesFired = await schedules.fireDue();
    const purged = await this.retention.runPass();
    await this.refreshPlans(true);
    const admitted = await queues.pass(true);
    // Without a maintenance pass of the policy (ownership 'none'), the owner-side poll is here.
    if (!ownership.maintenance.pollsMessages) await messaging.poll();
    return { pass, timersFired, schedulesFired, purged, admitted };
  }

  /**
   * For the testing kit's clock: fires what is due on workflow time now (timers, delayed starts,
   * deadlines, schedules), admits queued runs and delivers buffered messages, as a tick does.
   */
  async fireDue(): Promise<void> {
    const { ownership, transitions, schedules, queues, messaging } = this.deps;
    if (ownership.gate.isHalted) return;
    await transitions.processDueTimers();
    await schedules.fireDue();
    await queues.pass();
    await messaging.poll();
  }

  /** The testing kit's autoSkip: workflows are live and every one waits on time (a timer, a live child, a retry backoff here). */
  async allWaitOnTime(): Promise<boolean> {
    const { live, untimed } = await this.deps.store.workflows.untimed();
    return live > 0 && untimed.every((id) => this.deps.runtime.liveRun(id)?.inBackoffOnly === true);
  }

  /** The earliest timer or schedule fire of this schema after `after` (workflow time, epoch ms), or null. */
  async nextDueAt(after: number): Promise<number | null> {
    const { store } = this.deps;
    const at = new Date(after);
    const [t, s] = await Promise.all([store.timers.nextFireAt(at), store.schedules.nextFireAt(at)]);
    const times = [t, s].filter((d): d is Date => d !== null).map((d) => d.getTime());
    return times.length ? Math.min(...times) : null;
  }

  /** The timer loop's tick. */
  private async tick(): Promise<void> {
    const { ownership, transitions, schedules, messaging } = this.deps;
    // A deposed lease holder takes no timers: they are the new holder's (ownership 'lease').
    if (ownership.gate.isHalted) return;
    this.passAt = new Date();
    await transitions.processDueTimers();
    await schedules.fireDue();
    await this.retention.maybeRun();
    await this.refreshPlans();
    // Without a maintenance pass of the policy, the timer tick is also the owner-side poll.
    if (!ownership.maintenance.pollsMessages) await messaging.poll();
  }
}
