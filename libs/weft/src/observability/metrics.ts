import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type ClaimAttemptOutcome = 'acquired' | 'takeover' | 'lost_race' | 'deposed' | 'backoff_skipped';
export const CLAIM_ATTEMPT_OUTCOMES: readonly ClaimAttemptOutcome[] = ['acquired', 'takeover', 'lost_race', 'deposed', 'backoff_skipped'];

/** What the engine reports to; `WeftMetrics` implements it. No label ever carries a workflow id. */
export interface WeftMetricsSink {
  workflowStarted(type: string): void;
  workflowFinished(type: string, status: string): void;
  /** A run ended with ctx.continueAsNew and the next run of the same id began. */
  workflowContinued(type: string): void;
  stepDuration(seconds: number): void;
  claimAttempt(outcome: ClaimAttemptOutcome): void;
  claimsActive(n: number): void;
  renewalFailure(): void;
  renewalPassDuration(seconds: number): void;
  parked(n: number): void;
  scheduleFires(outcome: string, n: number): void;
  workflowsPurged(n: number): void;
  /** Workflows `enqueued` in a queue (all engines), as of this engine's last admission pass. */
  queueDepth(queue: string, n: number): void;
  /** Workflows of a queue `running` (all engines), as of this engine's last admission pass. */
  queueRunning(queue: string, n: number): void;
  /** Workflows this engine admitted from a queue. */
  queueAdmissions(queue: string, n: number): void;
  /** An admission pass found a queue's rate-limit window full while workflows waited. */
  queueRateLimitWait(queue: string): void;
}

/** How a schedule's fire time was handled (label `outcome` of weft_schedule_fires_total). */
export const SCHEDULE_FIRE_OUTCOMES = ['started', 'caught-up', 'triggered', 'skipped', 'buffered', 'missed', 'failed'] as const;

export interface WeftMetricsOptions {
  /** Registry to publish on (default: a private one, so two engines in one process never collide). */
  registry?: Registry;
}

const STEP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
const PASS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Prometheus metrics of one engine (prom-client). Re-uses metrics already on a shared registry. */
export class WeftMetrics implements WeftMetricsSink {
  readonly registry: Registry;
  private readonly claimAttempts: Counter<'outcome'>;
  private readonly claimsActiveGauge: Gauge;
  private readonly renewalFailures: Counter;
  private readonly started: Counter<'type'>;
  private readonly finished: Counter<'type' | 'status'>;
  private readonly continued: Counter<'type'>;
  private readonly steps: Histogram;
  private readonly parkedGauge: Gauge;
  private readonly renewalPass: Histogram;
  private readonly scheduleFiresCounter: Counter<'outcome'>;
  private readonly purged: Counter;
  private readonly queueDepthGauge: Gauge<'queue'>;
  private readonly queueRunningGauge: Gauge<'queue'>;
  private readonly admissions: Counter<'queue'>;
  private readonly rateLimitWaits: Counter<'queue'>;

  constructor(opts: WeftMetricsOptions = {}) {
    const registry = opts.registry ?? new Registry();
    this.registry = registry;
    const registers = [registry];
    // A shared registry may already hold them (a second engine, a test re-creating the module).
    const reuse = <M>(name: string, make: () => M): M => (registry.getSingleMetric(name) as M | undefined) ?? make();
    const counter = <L extends string>(name: string, help: string, labelNames: L[] = []) =>
      reuse(name, () => new Counter<L>({ name, help, labelNames, registers }));
    const gauge = (name: string, help: string) => reuse(name, () => new Gauge({ name, help, registers }));
    const histogram = (name: string, help: string, buckets: number[]) =>
      reuse(name, () => new Histogram({ name, help, buckets, registers }));

    this.claimAttempts = counter('weft_workflow_claim_attempts_total', 'Workflow claim attempts by outcome', ['outcome']);
    for (const outcome of CLAIM_ATTEMPT_OUTCOMES) this.claimAttempts.inc({ outcome }, 0);
    this.claimsActiveGauge = gauge('weft_workflow_claims_active', 'Workflow claims held by this engine');
    this.renewalFailures = counter('weft_workflow_claim_renewal_failures_total', 'Workflow claims lost at renewal');
    this.started = counter('weft_workflows_started_total', 'Workflows started, by type', ['type']);
    this.finished = counter('weft_workflows_finished_total', 'Workflows finished, by type and final status', ['type', 'status']);
    this.continued = counter('weft_workflows_continued_total', 'Runs ended by continueAsNew, by type', ['type']);
    this.steps = histogram('weft_step_duration_seconds', 'Step duration in seconds, all attempts', STEP_BUCKETS);
    this.parkedGauge = gauge('weft_workflows_parked', 'Workflows waiting on a timer or a message');
    this.scheduleFiresCounter = counter('weft_schedule_fires_total', 'Schedule fire times by outcome', ['outcome']);
    for (const outcome of SCHEDULE_FIRE_OUTCOMES) this.scheduleFiresCounter.inc({ outcome }, 0);
    this.purged = counter('weft_workflows_purged_total', 'Ended workflows deleted with their histories (retention and purge)');
    const labelledGauge = (name: string, help: string) =>
      reuse(name, () => new Gauge<'queue'>({ name, help, labelNames: ['queue'], registers }));
    this.queueDepthGauge = labelledGauge('weft_queue_depth', 'Workflows enqueued per queue (all engines)');
    this.queueRunningGauge = labelledGauge('weft_queue_running', 'Workflows of a queue running (all engines)');
    this.admissions = counter('weft_queue_admissions_total', 'Workflows admitted from a queue by this engine', ['queue']);
    this.rateLimitWaits = counter('weft_queue_rate_limit_waits_total', "Admission passes that found a queue's rate limit window full", [
      'queue',
    ]);
    this.renewalPass = histogram('weft_renewal_pass_duration_seconds', 'Duration of one renewal (background) pass', PASS_BUCKETS);
  }

  workflowStarted(type: string): void {
    this.started.inc({ type });
  }

  workflowFinished(type: string, status: string): void {
    this.finished.inc({ type, status });
  }

  workflowContinued(type: string): void {
    this.continued.inc({ type });
  }

  stepDuration(seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.steps.observe(seconds);
  }

  claimAttempt(outcome: ClaimAttemptOutcome): void {
    // Unknown outcomes are dropped rather than minting new label values.
    if (CLAIM_ATTEMPT_OUTCOMES.includes(outcome)) this.claimAttempts.inc({ outcome });
  }

  claimsActive(n: number): void {
    this.claimsActiveGauge.set(n);
  }

  renewalFailure(): void {
    this.renewalFailures.inc();
  }

  renewalPassDuration(seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.renewalPass.observe(seconds);
  }

  parked(n: number): void {
    this.parkedGauge.set(n);
  }

  scheduleFires(outcome: string, n: number): void {
    if ((SCHEDULE_FIRE_OUTCOMES as readonly string[]).includes(outcome) && n > 0) this.scheduleFiresCounter.inc({ outcome }, n);
  }

  workflowsPurged(n: number): void {
    if (n > 0) this.purged.inc(n);
  }

  queueDepth(queue: string, n: number): void {
    this.queueDepthGauge.set({ queue }, n);
  }

  queueRunning(queue: string, n: number): void {
    this.queueRunningGauge.set({ queue }, n);
  }

  queueAdmissions(queue: string, n: number): void {
    if (n > 0) this.admissions.inc({ queue }, n);
  }

  queueRateLimitWait(queue: string): void {
    this.rateLimitWaits.inc({ queue });
  }

  /** The exposition text, for a /metrics endpoint. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
