// The `queues` option and a start's queue and priority, checked before anything is written.
import { parseDuration } from '../../common/duration.js';
import { InvalidArgumentError, InvalidConfigurationError, QueueNotDeclaredError } from '../../common/errors.js';
import type { QueueOptions } from '../../common/types.js';
import { nameProblem } from '../validation.js';

/** Bounds: a limit past these is a configuration mistake, and the rate log lives in one row. */
export const MAX_QUEUES = 100;
export const MAX_QUEUE_CONCURRENCY = 10_000;
export const MAX_RATE_LIMIT = 10_000;
/** A rate window longer than a day would be a schedule, not a rate limit. */
export const MAX_RATE_PERIOD_MS = 86_400_000;
export const MIN_PRIORITY = -1000;
export const MAX_PRIORITY = 1000;

export interface ResolvedQueue {
  name: string;
  concurrency: number | null;
  perEngineConcurrency: number | null;
  rateLimit: { limit: number; periodMs: number } | null;
  /** Limits per partition key (null: not partitioned; every start of a partitioned queue names a key). */
  partition: { concurrency: number | null; rateLimit: { limit: number; periodMs: number } | null } | null;
  /** A parked run gives its slot back and takes one again before it goes on (docs/decisions/0040). */
  releaseWhileWaiting: boolean;
}

/** Where a start goes in its queue. */
export interface QueuedStart {
  queue: string;
  priority: number;
  /** Set exactly when the queue is partitioned. */
  partitionKey?: string;
}

const QUEUE_KEYS = new Set(['concurrency', 'perEngineConcurrency', 'rateLimit', 'partition', 'releaseWhileWaiting']);
const RATE_KEYS = new Set(['limit', 'period']);
const PARTITION_KEYS = new Set(['concurrency', 'rateLimit']);

function boundedInt(value: unknown, option: string, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > max) {
    throw new InvalidConfigurationError(option, `must be an integer from 1 to ${max} (got ${JSON.stringify(value)})`);
  }
  return value;
}

function unknownKey(o: object, allowed: Set<string>, option: string): void {
  const bad = Object.keys(o).find((k) => !allowed.has(k));
  if (bad !== undefined) throw new InvalidConfigurationError(`${option}.${bad}`, `is not an option; use ${[...allowed].join(', ')}`);
}

function resolveRate(r: unknown, option: string): ResolvedQueue['rateLimit'] {
  if (r === undefined) return null;
  if (typeof r !== 'object' || r === null)
    throw new InvalidConfigurationError(option, "must be an object like { limit: 20, period: '1s' }");
  unknownKey(r, RATE_KEYS, option);
  const { limit, period } = r as { limit?: unknown; period?: unknown };
  const periodMs = parseDuration(period as string, `${option}.period`);
  if (periodMs < 1 || periodMs > MAX_RATE_PERIOD_MS) {
    throw new InvalidConfigurationError(`${option}.period`, `must be from 1ms to 1 day (got ${periodMs} ms)`);
  }
  return { limit: boundedInt(limit, `${option}.limit`, MAX_RATE_LIMIT), periodMs };
}

function resolveQueue(name: string, q: unknown): ResolvedQueue {
  const option = `queues.${name}`;
  const problem = nameProblem(name);
  if (problem) throw new InvalidConfigurationError(option, `queue name ${problem}`);
  if (typeof q !== 'object' || q === null) throw new InvalidConfigurationError(option, 'must be an object like { concurrency: 10 }');
  unknownKey(q, QUEUE_KEYS, option);
  const o = q as QueueOptions;
  const concurrency = o.concurrency === undefined ? null : boundedInt(o.concurrency, `${option}.concurrency`, MAX_QUEUE_CONCURRENCY);
  const perEngine =
    o.perEngineConcurrency === undefined
      ? null
      : boundedInt(o.perEngineConcurrency, `${option}.perEngineConcurrency`, MAX_QUEUE_CONCURRENCY);
  if (concurrency !== null && perEngine !== null && perEngine > concurrency) {
    throw new InvalidConfigurationError(`${option}.perEngineConcurrency`, `must be at most concurrency (${concurrency})`);
  }
  return {
    name,
    concurrency,
    perEngineConcurrency: perEngine,
    rateLimit: resolveRate(o.rateLimit, `${option}.rateLimit`),
    partition: resolvePartition(o.partition, `${option}.partition`, concurrency),
    releaseWhileWaiting: resolveFlag(o.releaseWhileWaiting, `${option}.releaseWhileWaiting`),
  };
}

function resolveFlag(v: unknown, option: string): boolean {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new InvalidConfigurationError(option, `must be true or false (got ${JSON.stringify(v)})`);
  return v;
}

function resolvePartition(p: unknown, option: string, concurrency: number | null): ResolvedQueue['partition'] {
  if (p === undefined) return null;
  if (typeof p !== 'object' || p === null) throw new InvalidConfigurationError(option, 'must be an object like { concurrency: 2 }');
  unknownKey(p, PARTITION_KEYS, option);
  const o = p as { concurrency?: unknown; rateLimit?: unknown };
  const perKey = o.concurrency === undefined ? null : boundedInt(o.concurrency, `${option}.concurrency`, MAX_QUEUE_CONCURRENCY);
  if (concurrency !== null && perKey !== null && perKey > concurrency) {
    throw new InvalidConfigurationError(`${option}.concurrency`, `must be at most the queue's concurrency (${concurrency})`);
  }
  return { concurrency: perKey, rateLimit: resolveRate(o.rateLimit, `${option}.rateLimit`) };
}

/** The `queues` option, validated at construction: every value bounded, every mistake named. */
export function resolveQueues(queues: unknown): Map<string, ResolvedQueue> {
  if (queues === undefined) return new Map();
  if (typeof queues !== 'object' || queues === null || Array.isArray(queues)) {
    throw new InvalidConfigurationError(
      'queues',
      "must be an object like { payments: { concurrency: 10, rateLimit: { limit: 20, period: '1s' } } }",
    );
  }
  const entries = Object.entries(queues);
  if (entries.length > MAX_QUEUES) throw new InvalidConfigurationError('queues', `at most ${MAX_QUEUES} queues (got ${entries.length})`);
  return new Map(entries.map(([name, q]) => [name, resolveQueue(name, q)]));
}

/** A start's queue (its own, else its type's), priority and partition key; throws before anything is written. */
export function startQueue(
  opts: { queue?: unknown; priority?: unknown; partitionKey?: unknown },
  type: { queue?: string; partitionKey?: (input: never) => string },
  declared: ReadonlyMap<string, ResolvedQueue>,
  input?: unknown,
): QueuedStart | null {
  const queue = opts.queue ?? type.queue;
  if (queue === undefined) {
    if (opts.priority !== undefined) throw new InvalidArgumentError('priority', 'needs a queue: pass `queue` too, or give the type one');
    if (opts.partitionKey !== undefined) throw new InvalidArgumentError('partitionKey', 'needs a partitioned queue: pass `queue` too');
    return null;
  }
  if (typeof queue !== 'string' || !declared.has(queue)) {
    const problem = nameProblem(queue);
    if (problem) throw new InvalidArgumentError('queue', problem);
    throw new QueueNotDeclaredError(queue as string, [...declared.keys()]);
  }
  const priority = opts.priority ?? 0;
  if (typeof priority !== 'number' || !Number.isInteger(priority) || priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
    throw new InvalidArgumentError(
      'priority',
      `must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY} (got ${JSON.stringify(priority)})`,
    );
  }
  const q = declared.get(queue)!;
  if (!q.partition) {
    if (opts.partitionKey !== undefined) {
      throw new InvalidArgumentError(
        'partitionKey',
        `queue "${queue}" is not partitioned: declare queues.${queue}.partition, or drop the key`,
      );
    }
    return { queue, priority };
  }
  return { queue, priority, partitionKey: startPartitionKey(queue, opts.partitionKey, type.partitionKey, input) };
}

/** The start's own key, else the type's, read from the input; a partitioned queue needs one. */
function startPartitionKey(queue: string, own: unknown, ofType: ((input: never) => string) | undefined, input: unknown): string {
  let key = own;
  if (key === undefined && ofType) {
    try {
      key = ofType(input as never);
    } catch (err) {
      throw new InvalidArgumentError('partitionKey', `the type's partitionKey function threw: ${(err as Error)?.message}`, { cause: err });
    }
  }
  if (key === undefined) {
    throw new InvalidArgumentError(
      'partitionKey',
      `queue "${queue}" is partitioned: pass partitionKey, or give the type @Workflow({ partitionKey: (input) => ... })`,
    );
  }
  const problem = nameProblem(key);
  if (problem) throw new InvalidArgumentError('partitionKey', problem);
  return key as string;
}

/** One declared queue for an operator (the dashboard's queues view). */
export interface QueueView {
  name: string;
  concurrency: number | null;
  perEngineConcurrency: number | null;
  rateLimit: { limit: number; periodMs: number } | null;
  /** Limits per partition key; null when the queue is not partitioned. */
  partition: { concurrency: number | null; rateLimit: { limit: number; periodMs: number } | null } | null;
  /** A parked run gives its slot back while it waits. */
  releaseWhileWaiting: boolean;
  /** As of this engine's last admission pass. */
  enqueued: number;
  running: number;
}
