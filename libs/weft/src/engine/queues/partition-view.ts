// engine.queuePartitions: one queue's partition keys with work, for an operator (the dashboard's
// queue view, GET <prefix>/queues/:name/partitions). Read from weft_workflows on each call.
import { InvalidArgumentError, QueueNotDeclaredError } from '../../common/errors.js';
import type { PartitionFigures } from '../../storage/repositories/workflow-partitions.js';
import type { WorkflowRepository } from '../../storage/repositories/workflow.repository.js';
import { nameProblem } from '../validation.js';
import type { ResolvedQueue } from './options.js';

export type { PartitionFigures } from '../../storage/repositories/workflow-partitions.js';

export const DEFAULT_PARTITIONS_SHOWN = 20;
export const MAX_PARTITIONS_SHOWN = 100;

/** A queue's busiest partition keys. */
export interface QueuePartitionsView {
  queue: string;
  /** False for a queue without `partition`: then no key has work and the list is empty. */
  partitioned: boolean;
  /** Every key with an enqueued or running workflow, not only those listed. */
  keysWithWork: number;
  /** Busiest first (most enqueued, then oldest enqueued, then most running), at most `limit`. */
  partitions: PartitionFigures[];
}

function partitionsLimit(limit: unknown): number {
  if (limit === undefined) return DEFAULT_PARTITIONS_SHOWN;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PARTITIONS_SHOWN) {
    throw new InvalidArgumentError('limit', `must be an integer from 1 to ${MAX_PARTITIONS_SHOWN} (got ${JSON.stringify(limit)})`);
  }
  return limit;
}

/** Checks the queue and the bound before reading; a queue that is not partitioned answers an empty list without a read. */
export async function queuePartitions(
  declared: ReadonlyMap<string, ResolvedQueue>,
  workflows: WorkflowRepository,
  queue: string,
  opts: { limit?: number } = {},
): Promise<QueuePartitionsView> {
  const q = declared.get(queue);
  if (!q) {
    // A malformed name is refused as such, not echoed back whole in the not-declared message.
    const problem = nameProblem(queue);
    if (problem) throw new InvalidArgumentError('queue', problem);
    throw new QueueNotDeclaredError(queue, [...declared.keys()]);
  }
  const limit = partitionsLimit((opts as { limit?: unknown } | undefined)?.limit);
  if (!q.partition) return { queue, partitioned: false, keysWithWork: 0, partitions: [] };
  return { queue, partitioned: true, ...(await workflows.queuePartitions(queue, limit)) };
}
