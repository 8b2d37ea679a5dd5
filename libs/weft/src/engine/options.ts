import { InvalidConfigurationError } from '../common/errors.js';
import type { WeftOptions } from '../common/options.js';
import type { WeftMetricsSink } from '../observability/metrics.js';
import { EngineTracing } from '../observability/tracing.js';
import type { OwnershipOptions } from '../ownership/config.js';
import { Duration, parseDuration } from '../common/duration.js';
import type { AmbientTransaction, QueueOptions, RetentionOptions, WeftLogger } from '../common/types.js';
import type { WorkflowClock } from '../common/clock.js';
import type { CodecOption } from '../common/codec.js';
import type { WeftInterceptor } from '../common/interceptors.js';
import { EngineInterceptors } from './interceptors.js';
import { systemClock } from './clock.js';
import { nameProblem } from './validation.js';
import { WorkflowStatus } from '../common/types.js';

export interface WeftEngineOptions extends WeftOptions, OwnershipOptions {
  /** Called with every Weft warning (claim lost, wake discarded, lease lost); they also go to the logger and process 'warning'. */
  onWarning?: (warning: Error) => void;
  /** Metric hooks (WeftMetrics implements them); any subset. */
  metrics?: Partial<WeftMetricsSink>;
  logger?: WeftLogger;
  /** Parked workflows kept in memory; beyond this the least recently parked are evicted (default 10,000). */
  maxCachedWorkflows?: number;
  /** How often due timers are polled when no local timer is sooner (default 1s). */
  timerPollInterval?: Duration;
  /** Largest input, output, step result or message payload, in bytes (default 1 MiB). */
  maxPayloadBytes?: number;
  /** 'manual' turns every background loop off; call runMaintenance() (default 'auto'). */
  backgroundTasks?: 'auto' | 'manual';
  /** LISTEN/NOTIFY wake-ups for messages (default true); the poll on the background cadence is the backstop. */
  notify?: boolean;
  /** How long dispose() lets running steps finish before aborting them (default 5s). */
  shutdownGracePeriod?: Duration;
  /**
   * How often steps' heartbeats are written, all of them in one statement (default 1s): the
   * details a takeover resumes from are at most this old (docs/long-steps.md).
   */
  heartbeatFlushInterval?: Duration;
  /**
   * How long a cancelled workflow's code has, from the cancel, to run its cleanup
   * (ctx.nonCancellable) and end; past it the workflow ends `cancelled` whatever it is doing
   * (default 60s; docs/cancellation.md).
   */
  cancelGracePeriod?: Duration;
  /** Ended workflows older than this (by final status) are deleted with their histories by maintenance (docs/retention.md). */
  retention?: RetentionOptions;
  /** Queues by name: limits on running and admitted workflows that hold across all engines (docs/queues.md). */
  queues?: Record<string, QueueOptions>;
  /**
   * OpenTelemetry spans for workflow runs and steps when `@opentelemetry/api` is installed and an
   * SDK is registered (default true); false creates none (docs/operations.md#tracing).
   */
  tracing?: boolean;
  /**
   * Libraries' ambient transactions that a transactional body joins and a start inside one joins
   * (docs/transactions.md). typeorm-transactional's is found by itself when installed; WeftModule
   * adds @nestjs-cls/transactional's.
   */
  ambientTransactions?: AmbientTransaction[];
  /**
   * Where workflow time comes from (ctx.now(), timers, deadlines, delayed starts, schedules, step
   * retry backoff); default real time. The testing kit (`@weft/nest/testing`) gives one that skips
   * time (docs/testing.md).
   */
  clock?: WorkflowClock;
  /**
   * Encodes every payload at rest (inputs, outputs, step results, messages, events, streams); the
   * codec's id is stored with each, so `{ current, accepts }` rotates keys (docs/codecs.md).
   */
  codec?: CodecOption;
  /**
   * Hooks around starts, runs, step attempts and signals, the first outermost; a start's
   * headers are stored with the workflow and given to every run and step of it (docs/interceptors.md).
   */
  interceptors?: WeftInterceptor[];
  /** @internal Imports `@opentelemetry/api`; tests inject an absent one. */
  loadTracingApi?: () => Promise<unknown>;
}

export interface ResolvedEngineOptions {
  engineId: string;
  metrics: Partial<WeftMetricsSink>;
  logger: WeftLogger;
  maxCachedWorkflows: number;
  timerPollMs: number;
  maxPayloadBytes: number;
  backgroundTasks: 'auto' | 'manual';
  shutdownGraceMs: number;
  heartbeatFlushMs: number;
  cancelGraceMs: number;
  notify: boolean;
  /** Empty: retention off. */
  retention: Array<{ status: WorkflowStatus; keepMs: number }>;
  /** NOOP until loaded by bootstrap() or the first start. */
  tracing: EngineTracing;
  clock: WorkflowClock;
  /** Null without interceptors: every hook site then keeps its plain path. */
  interceptors: EngineInterceptors | null;
}

const RETENTION_STATUSES: Record<keyof RetentionOptions, WorkflowStatus> = {
  completed: WorkflowStatus.Completed,
  failed: WorkflowStatus.Failed,
  cancelled: WorkflowStatus.Cancelled,
  timedOut: WorkflowStatus.TimedOut,
};

function resolveRetention(r: RetentionOptions | undefined): ResolvedEngineOptions['retention'] {
  if (r === undefined) return [];
  if (typeof r !== 'object' || r === null) throw new InvalidConfigurationError('retention', 'must be an object like { completed: "7d" }');
  return Object.entries(r).map(([key, value]) => {
    const status = RETENTION_STATUSES[key as keyof RetentionOptions];
    if (!Object.prototype.hasOwnProperty.call(RETENTION_STATUSES, key)) {
      throw new InvalidConfigurationError(`retention.${key}`, `is not a status; use ${Object.keys(RETENTION_STATUSES).join(', ')}`);
    }
    return { status, keepMs: parseDuration(value as Duration, `retention.${key}`) };
  });
}

function positiveInt(value: number | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 1) throw new InvalidConfigurationError(option, `must be a positive integer (got ${value})`);
  return value;
}

/**
 * An engine holds one pooled connection for LISTEN and needs one more for everything else (no
 * path holds one connection while it waits for a second), so a pool of 1 could never work.
 */
export const MIN_POOL_SIZE = 2;
const MAX_POOL_SIZE = 1000;

/** Checked before the pool is opened: a size that cannot work is refused, not left to stall. */
export function validatePoolSize(database: WeftOptions['database']): void {
  if (!database || typeof database !== 'object' || !('url' in database) || database.poolSize === undefined) return;
  const n = database.poolSize;
  if (!Number.isInteger(n) || n < MIN_POOL_SIZE || n > MAX_POOL_SIZE) {
    throw new InvalidConfigurationError(
      'database.poolSize',
      `must be an integer from ${MIN_POOL_SIZE} to ${MAX_POOL_SIZE} (got ${String(n)}); an engine holds one connection for LISTEN and needs at least one more`,
    );
  }
}

function resolveClock(c: WorkflowClock | undefined): WorkflowClock {
  if (c === undefined) return systemClock;
  const ok =
    typeof c === 'object' &&
    c !== null &&
    ['now', 'offsetMs', 'setTimer'].every((k) => typeof (c as unknown as Record<string, unknown>)[k] === 'function');
  if (!ok) throw new InvalidConfigurationError('clock', 'must have now(), offsetMs() and setTimer(fn, ms) (see docs/testing.md)');
  return c;
}

const consoleLogger: WeftLogger = {
  log: (m) => console.log(`[weft] ${m}`),
  warn: (m) => console.warn(`[weft] ${m}`),
  error: (m) => console.error(`[weft] ${m}`),
};

export function resolveEngineOptions(o: WeftEngineOptions, engineId: string): ResolvedEngineOptions {
  // Claims and the lease store the engine id in a varchar(255) column.
  const idProblem = nameProblem(engineId);
  if (idProblem) throw new InvalidConfigurationError('engineId', idProblem);
  if (o.backgroundTasks !== undefined && o.backgroundTasks !== 'auto' && o.backgroundTasks !== 'manual') {
    throw new InvalidConfigurationError('backgroundTasks', `must be 'auto' or 'manual' (got ${JSON.stringify(o.backgroundTasks)})`);
  }
  const timerPollMs = parseDuration(o.timerPollInterval ?? 1000, 'timerPollInterval');
  if (timerPollMs < 10) throw new InvalidConfigurationError('timerPollInterval', `must be at least 10ms (got ${timerPollMs})`);
  const heartbeatFlushMs = parseDuration(o.heartbeatFlushInterval ?? 1000, 'heartbeatFlushInterval');
  if (heartbeatFlushMs < 10) {
    throw new InvalidConfigurationError('heartbeatFlushInterval', `must be at least 10ms (got ${heartbeatFlushMs})`);
  }
  return {
    engineId,
    heartbeatFlushMs,
    metrics: o.metrics ?? {},
    logger: o.logger ?? consoleLogger,
    maxCachedWorkflows: positiveInt(o.maxCachedWorkflows, 'maxCachedWorkflows', 10_000),
    timerPollMs,
    maxPayloadBytes: positiveInt(o.maxPayloadBytes, 'maxPayloadBytes', 1024 * 1024),
    backgroundTasks: o.backgroundTasks ?? 'auto',
    shutdownGraceMs: parseDuration(o.shutdownGracePeriod ?? 5000, 'shutdownGracePeriod'),
    cancelGraceMs: parseDuration(o.cancelGracePeriod ?? 60_000, 'cancelGracePeriod'),
    notify: o.notify !== false,
    retention: resolveRetention(o.retention),
    clock: resolveClock(o.clock),
    interceptors: EngineInterceptors.from(o.interceptors),
    tracing: new EngineTracing({ enabled: o.tracing !== false, engineId, logger: o.logger ?? consoleLogger, load: o.loadTracingApi }),
  };
}
