// The partition keys of one queue with work, for an operator (engine.queuePartitions, the
// dashboard's queue view): counted from weft_workflows each time, never from a stored counter.
// WorkflowRepository.queuePartitions runs the statement.
import { qualify } from '../schema-name.js';

/** One partition key with work: its enqueued and running workflows. */
export interface PartitionFigures {
  partitionKey: string;
  enqueued: number;
  /** Its workflows in status `running` (a parked run of a releaseWhileWaiting queue included). */
  running: number;
  /** When its oldest enqueued workflow was created (null: none enqueued). */
  oldestEnqueuedAt: Date | null;
  /** That workflow's age by the database clock, ms (null: none enqueued). */
  oldestEnqueuedAgeMs: number | null;
}

/**
 * $1 queue, $2 most keys returned. Each status is counted on its own partial index
 * (weft_workflows_partition_enqueued_idx, weft_workflows_partition_running_idx), then the two are
 * joined by key; keys_with_work counts every key before the LIMIT. Busiest first: the longest
 * backlog, then the oldest, then the most running.
 */
export function queuePartitionsSql(schema: string): string {
  const wf = qualify(schema, 'weft_workflows');
  return `
    WITH enq AS (
      SELECT partition_key AS k, count(*)::int AS n, min(created_at) AS oldest FROM ${wf}
      WHERE queue = $1 AND status = 'enqueued' AND partition_key IS NOT NULL GROUP BY partition_key
    ),
    run AS (
      SELECT partition_key AS k, count(*)::int AS n FROM ${wf}
      WHERE queue = $1 AND status = 'running' AND partition_key IS NOT NULL GROUP BY partition_key
    ),
    keyed AS (
      SELECT COALESCE(enq.k, run.k) AS k, COALESCE(enq.n, 0) AS enqueued, COALESCE(run.n, 0) AS running, enq.oldest
      FROM enq FULL JOIN run ON run.k = enq.k
    )
    SELECT k AS partition_key, enqueued, running, oldest AS oldest_enqueued_at,
           (extract(epoch FROM clock_timestamp() - oldest) * 1000)::float8 AS oldest_age_ms,
           count(*) OVER ()::int AS keys_with_work
    FROM keyed
    ORDER BY enqueued DESC, oldest ASC NULLS LAST, running DESC, k
    LIMIT $2`;
}

export interface PartitionRow {
  partition_key: string;
  enqueued: number;
  running: number;
  oldest_enqueued_at: Date | null;
  oldest_age_ms: number | null;
  keys_with_work: number;
}

export function partitionsFrom(rows: PartitionRow[]): { keysWithWork: number; partitions: PartitionFigures[] } {
  return {
    keysWithWork: rows[0]?.keys_with_work ?? 0,
    partitions: rows.map((r) => ({
      partitionKey: r.partition_key,
      enqueued: r.enqueued,
      running: r.running,
      oldestEnqueuedAt: r.oldest_enqueued_at,
      oldestEnqueuedAgeMs: r.oldest_age_ms === null ? null : Math.max(0, Math.round(r.oldest_age_ms)),
    })),
  };
}
