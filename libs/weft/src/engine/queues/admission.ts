// Queue admission (docs/queues.md): every engine runs a short background pass that admits the
// next enqueued workflows of each declared queue, in a transaction that makes them `running` and
// claims them for itself (storage/repositories/queue.repository.ts), then launches them here. A
// local start into a queue and a local end of a queued run nudge the pass, so admission waits for
// neither the tick nor another engine.
import { detached } from '../../common/detached.js';
import { QueueNotDeclaredError } from '../../common/errors.js';
import type { StartOptions, WorkflowDefinition } from '../../common/types.js';
import type { OwnershipPolicy } from '../../ownership/policy.js';
import type { AdmitResult } from '../../storage/repositories/queue.repository.js';
import type { AdmittedWorkflow, HandoffOutcome, HandoffRequest } from '../../storage/types.js';
import type { WorkflowStore } from '../../storage/workflow-store.js';
import type { ResolvedEngineOptions } from '../options.js';
import type { WorkflowRegistry } from '../registry.js';
import type { Runtime } from '../run/runtime.js';
import { TimerLoop } from '../timer-loop.js';
import { type QueuedStart, type ResolvedQueue, startQueue } from './options.js';
import type { QueueSlots } from './slots.js';

/** Admitted per queue per pass: a busy queue cannot hold a pass (and the other queues) for long. */
export const ADMIT_BATCH = 100;
const FORGET_AFTER_MS = 60_000;

export interface QueueAdmissionDependencies {
  store: WorkflowStore;
  registry: WorkflowRegistry;
  ownership: OwnershipPolicy;
  runtime: Runtime;
  options: ResolvedEngineOptions;
  queues: Map<string, ResolvedQueue>;
  /** Woken runs of releaseWhileWaiting queues waiting for a slot: served before fresh admissions. */
  slots: QueueSlots;
  /** This engine's id: a freed slot's NOTIFY names it, so the engine skips its own. */
  engineId: string;
  /** False once this engine may not start runs (disposed, draining, deposed, not the lease holder). */
  mayAdmit(): boolean;
}

export type QueueFigures = Record<string, { enqueued: number; running: number }>;

export class QueueAdmission {
  readonly declared: ReadonlyMap<string, ResolvedQueue>;
  /** Runs this engine admitted (id → when, and its queue): their end frees a slot, worth a pass at once. */
  private readonly admittedHere = new Map<string, { at: number; queue: string }>();
  /** Runs whose end handed their slot to the next workflow: their end needs no pass. */
  private readonly handedOff = new Set<string>();
  /** Queues worth an admission on the next pass: a local start, a freed slot, a batch that left work. */
  private readonly pending = new Set<string>();
  /** Queues whose freed slot is being announced to the other engines (one NOTIFY at a time per queue). */
  private readonly announcing = new Set<string>();
  private readonly announcedAt = new Map<string, number>();
  /** Queues whose last look (the figures or an admission) saw work waiting. */
  private readonly backlog = new Set<string>();
  private readonly loop: TimerLoop;
  private figures: QueueFigures = {};
  private figuresAt = -Infinity;
  private turn = 0;

  constructor(private readonly deps: QueueAdmissionDependencies) {
    this.declared = deps.queues;
    this.loop = new TimerLoop(
      async () => void (await this.pass()),
      deps.options.timerPollMs,
      (err) => deps.options.logger.warn(`Queue admission failed: ${(err as Error).message}`),
    );
  }

  /** `@Workflow(name, { queue })` must name a declared queue: checked at registration. */
  checkDefinition(def: WorkflowDefinition): void {
    // An undeclared (or badly named) queue: startQueue throws the error a start would.
    if (def.queue !== undefined && !this.declared.has(def.queue)) startQueue({ queue: def.queue }, {}, this.declared);
  }

  /** A start's queue, priority and partition key, or null outside a queue (no cost beyond a few property reads). */
  startOf(opts: StartOptions, def: WorkflowDefinition, input: unknown): QueuedStart | null {
    if (opts.queue === undefined && opts.priority === undefined && def.queue === undefined && opts.partitionKey === undefined) return null;
    return startQueue(opts, def, this.declared, input);
  }

  assertDeclared(queue: string): void {
    if (!this.declared.has(queue)) throw new QueueNotDeclaredError(queue, [...this.declared.keys()]);
  }

  /** The background pass (backgroundTasks 'auto'). */
  start(): void {
    if (this.declared.size > 0) this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** A slot may have freed or work arrived (in `queue`, when known): pass soon instead of at the next tick. */
  nudge(inMs = 0, queue?: string): void {
    if (queue !== undefined) this.pending.add(queue);
    this.loop.nudgeAt(Date.now() + inMs);
  }

  /** A run ended here: if this engine admitted it and its queue has work waiting, its slot is worth a pass now. */
  ended(workflowId: string): void {
    const mine = this.admittedHere.get(workflowId);
    if (!mine) return;
    this.admittedHere.delete(workflowId);
    // Its end commit admitted the next one already (handoff): nothing freed.
    if (this.handedOff.delete(workflowId)) return;
    if (this.backlog.has(mine.queue)) this.nudge(0, mine.queue);
  }

  /**
   * What the end commit of a run of `queue` does with its slot (docs/decisions/0042), or null: it
   * just frees it, and a pass follows when the queue has work. It hands the slot to the queue's next
   * enqueued workflow (`pick`) where a swap keeps every limit and the order (no rate limit: a
   * hand-off is an admission its window would have to count; not partitioned: the key whose turn it
   * is may not be the ending run's; not releaseWhileWaiting: woken runs go before fresh work) and
   * the queue is known to have work. Where the backlog is not known, the commit only reports
   * whether work is left. An engine that may not admit (draining, deposed) asks for a pick of no
   * type: the commit frees the slot and, with work left, announces it to the other engines. Null
   * under backgroundTasks 'manual' (admissions stay with runMaintenance).
   */
  handoffRequest(queue: string): HandoffRequest | null {
    const q = this.declared.get(queue);
    if (!this.loop.isRunning || !q) return null;
    const known = this.backlog.has(queue);
    const mayAdmit = this.deps.mayAdmit();
    const swaps = swapKeepsLimits(q);
    // A known backlog that a pass admits anyway: the commit has nothing to add.
    if (mayAdmit && known && !swaps) return null;
    const pick = !mayAdmit || (swaps && known);
    return this.request(queue, pick, pick && mayAdmit ? this.deps.registry.names() : []);
  }

  private request(queue: string, pick: boolean, types: string[]): HandoffRequest {
    const claimer = this.deps.ownership.claims.claimer();
    const claim = claimer
      ? { engineId: claimer.engineId, ttlMs: claimer.ttlMs, graceMs: claimer.graceMs }
      : { engineId: null, ttlMs: null, graceMs: null };
    return { queue, pick, notifier: this.deps.engineId, types, ...claim };
  }

  /** The end of `fromId` committed: the workflow it handed its slot to runs here at once; a freed slot with work left is worth a pass. */
  endCommitted(queue: string, fromId: string, h: HandoffOutcome, sentAt: number): void {
    if (h.more) this.backlog.add(queue);
    else this.backlog.delete(queue);
    if (!h.to) return; // ended() nudges a pass when work is left
    if (this.admittedHere.has(fromId)) this.handedOff.add(fromId);
    this.deps.options.metrics.queueAdmissions?.(queue, 1);
    this.launch(queue, h.to, sentAt);
  }

  /** Another engine freed a slot of `queue` with work left (its NOTIFY): a pass here now. */
  freedElsewhere(queue: string, engineId: string): void {
    if (engineId === this.deps.engineId || !this.declared.has(queue)) return;
    this.backlog.add(queue);
    this.nudge(0, queue);
  }

  /** Enqueued and running per queue as of the last pass (health details; no I/O). */
  snapshot(): QueueFigures {
    return this.figures;
  }

  /**
   * One admission pass; resolves with how many it admitted. A full pass (on the tick, at most
   * every timerPollInterval, or `full`) first reads every queue's figures (one statement) and
   * tries each queue with work; a pass in between, nudged by a start or an end here, tries only
   * the queues it was nudged for: one round trip per queue and batch.
   */
  async pass(full = false): Promise<number> {
    const { options } = this.deps;
    if (this.declared.size === 0 || !this.deps.mayAdmit()) return 0;
    const types = this.deps.registry.names();
    // Taken before any await: a nudge that arrives meanwhile is for the next pass.
    const nudged = [...this.pending];
    this.pending.clear();
    // Runs of this engine woken while their slot was released take slots first (the admission
    // counts them as holding theirs, so fresh work cannot take them meanwhile).
    for (const queue of this.deps.slots.queuesWaiting()) await this.deps.slots.retake(queue);
    const names =
      full || Date.now() - this.figuresAt >= options.timerPollMs ? await this.readFigures(types, nudged) : types.length > 0 ? nudged : [];
    let admitted = 0;
    // A different queue goes first on each pass, so none waits behind the others' batches.
    const first = names.length ? this.turn++ % names.length : 0;
    for (let i = 0; i < names.length; i++) {
      const q = this.declared.get(names[(first + i) % names.length])!;
      const room = this.deps.ownership.claims.reserve(ADMIT_BATCH);
      if (room.granted <= 0 || !this.deps.mayAdmit()) {
        room.done();
        break;
      }
      try {
        admitted += await this.admit(q, room.granted, types);
      } finally {
        room.done();
      }
    }
    if (this.pending.size) this.nudge();
    return admitted;
  }

  /** Every queue's figures (the gauges, and which queues have work); resolves with the queues worth an admission. */
  private async readFigures(types: string[], nudged: string[]): Promise<string[]> {
    const { store, options } = this.deps;
    const stats = await store.queues.stats([...this.declared.keys()]);
    this.figuresAt = Date.now();
    this.forgetGone();
    this.figures = Object.fromEntries(stats);
    for (const [queue, s] of stats) {
      if (s.enqueued > 0) this.backlog.add(queue);
      else this.backlog.delete(queue);
      options.metrics.queueDepth?.(queue, s.enqueued);
      options.metrics.queueRunning?.(queue, s.running);
    }
    if (types.length === 0) return [];
    const worth = [...this.declared.values()].filter((q) => worthAdmitting(q, stats.get(q.name))).map((q) => q.name);
    return [...new Set([...worth, ...nudged])];
  }

  private async admit(q: ResolvedQueue, room: number, types: string[]): Promise<number> {
    const { store, ownership, options } = this.deps;
    const claimer = ownership.claims.claimer();
    // The fence a command of this engine carries under ownership 'lease' (none in the other modes).
    const leaseFence = ownership.fence.leaseFence();
    const sentAt = performance.now();
    const res = await store.queues.admit({
      queue: q.name,
      max: room,
      concurrency: q.concurrency,
      perEngineConcurrency: q.perEngineConcurrency,
      // Without perEngineConcurrency nothing counts per engine: no claim probe per running row.
      perEngineOwner: q.perEngineConcurrency === null ? null : (claimer?.engineId ?? null),
      rateLimit: q.rateLimit,
      partition: q.partition,
      types,
      claimer,
      leaseFence,
    });
    const n = res.admitted.length;
    if (n) options.metrics.queueAdmissions?.(q.name, n);
    for (const w of res.admitted) this.launch(q.name, w, sentAt);
    this.afterAdmission(q, room, res);
    return n;
  }

  /**
   * Runs a workflow admitted to this engine (by an admission or a hand-off) from what the admission
   * returned: its row as its start wrote it, so it begins as a direct start's run (docs/decisions/0046).
   */
  private launch(queue: string, w: AdmittedWorkflow, sentAt: number): void {
    // Not in the context of the run whose end handed the slot over (common/detached.ts).
    detached(() => this.launchDetached(queue, w, sentAt));
  }

  private launchDetached(queue: string, w: AdmittedWorkflow, sentAt: number): void {
    const { registry, ownership, runtime, store } = this.deps;
    // Without the claim (a leftover row another engine still holds), its holder or a reclaim scan drives it.
    if (!ownership.claims.adoptStartClaim(w.id, w.claimEpoch, sentAt)) return;
    this.admittedHere.set(w.id, { at: Date.now(), queue });
    // A payload an asynchronous codec must decode (or one that does not decode): its load does it, or says why not.
    if (!store.payloads.admittedNow(w)) return void runtime.drive(w.id);
    const run = {
      workflowId: w.id,
      definition: registry.get(w.type),
      input: w.input,
      runNumber: w.runNumber,
      version: w.version,
      queue,
      singleton: w.singleton,
      storedTimers: w.storedTimers,
      headers: w.headers ?? null,
      attributes: w.attributes ?? undefined,
      traceContext: w.traceContext ?? null, // its span links to its starter's, as a loaded run's does
    };
    runtime.launchNew({ ...run, parentId: w.parentId }, w.inbox);
  }

  /** What an admission tells: the queue's figures, whether work is left, and when to look again. */
  private afterAdmission(q: ResolvedQueue, room: number, res: AdmitResult): void {
    const { options } = this.deps;
    const n = res.admitted.length;
    const was = this.figures[q.name];
    this.figures = { ...this.figures, [q.name]: { enqueued: Math.max(0, (was?.enqueued ?? 0) - n), running: res.runningBefore + n } };
    if (res.more) this.workLeft(q, room, res);
    else this.backlog.delete(q.name);
    const rate = q.rateLimit;
    if (rate && n < room && res.recentCount + n >= rate.limit) {
      // The window is full: come back when its oldest admission leaves it.
      options.metrics.queueRateLimitWait?.(q.name);
      this.nudge(Math.ceil(res.windowFreesInMs ?? rate.periodMs) + 1, q.name);
    }
    const keyRate = q.partition?.rateLimit;
    if (keyRate && res.more && n < res.room) {
      // Keys held by their own rate windows while the queue had room: look again about when one frees.
      this.nudge(Math.max(10, Math.min(options.timerPollMs, Math.ceil(keyRate.periodMs / keyRate.limit))), q.name);
    }
  }

  /** An admission left work: the next batch at once when this one filled up; the other engines told when they could take it. */
  private workLeft(q: ResolvedQueue, room: number, res: AdmitResult): void {
    this.backlog.add(q.name);
    if (batchAgain(q, room, res)) this.pending.add(q.name);
    if (othersCouldTake(q, res)) this.announce(q.name);
  }

  /**
   * The queue has room and work this engine did not take (its types, its perEngineConcurrency, its
   * claims' room): the other engines hear it (docs/decisions/0042). One NOTIFY at a time per queue;
   * lost, their poll is the backstop.
   */
  private announce(queue: string): void {
    // At most once per timerPollInterval: engines that cannot take the work either would otherwise
    // answer each other's notices with passes and notices.
    const last = this.announcedAt.get(queue) ?? -Infinity;
    if (this.announcing.has(queue) || Date.now() - last < this.deps.options.timerPollMs) return;
    this.announcedAt.set(queue, Date.now());
    this.announcing.add(queue);
    void this.deps.store.queues
      .announceFreed(queue, this.deps.engineId)
      .catch((err: unknown) =>
        this.deps.options.logger.warn(`A freed slot of queue "${queue}" was not announced: ${(err as Error).message}`),
      )
      .finally(() => this.announcing.delete(queue));
  }

  /**
   * Runs no longer live here (evicted while parked, taken over) are forgotten; the tick covers
   * their end. Only after a while: a run just launched may not be live yet.
   */
  private forgetGone(): void {
    const before = Date.now() - FORGET_AFTER_MS;
    for (const [id, { at }] of this.admittedHere) if (at < before && !this.deps.runtime.isLive(id)) this.admittedHere.delete(id);
  }
}

/**
 * After a batch that left work: the next at once when it was full (a short one waits for a slot to
 * free). Partitioned, a batch is also short when a key's share or priority ran out: again while it admits.
 */
function batchAgain(q: ResolvedQueue, room: number, res: AdmitResult): boolean {
  const n = res.admitted.length;
  return n === room || (q.partition !== null && n > 0 && n < res.room);
}

/** A one-for-one swap of an ending run for the next enqueued one keeps every limit and the order of this queue. */
function swapKeepsLimits(q: ResolvedQueue): boolean {
  return !q.rateLimit && !q.partition && !q.releaseWhileWaiting;
}

/**
 * After an admission that left work: the queue's own limits left room that this engine's bounds kept
 * (perEngineConcurrency, its claims' room, the lease) or that its types could not use (unpartitioned:
 * a partitioned batch also stops at its keys' limits, which bind every engine alike).
 */
function othersCouldTake(q: ResolvedQueue, res: AdmitResult): boolean {
  const n = res.admitted.length;
  const byConcurrency = q.concurrency === null ? Infinity : q.concurrency - res.runningBefore;
  const queueRoom = Math.min(byConcurrency, q.rateLimit ? q.rateLimit.limit - res.recentCount : Infinity);
  if (queueRoom - n <= 0) return false;
  return res.room < queueRoom || (q.partition === null && n < res.room);
}

/** An admission is worth its round trip when the queue has work and the last count left room. */
function worthAdmitting(q: ResolvedQueue, s: { enqueued: number; running: number } | undefined): boolean {
  return s !== undefined && s.enqueued > 0 && (q.concurrency === null || s.running < q.concurrency);
}
