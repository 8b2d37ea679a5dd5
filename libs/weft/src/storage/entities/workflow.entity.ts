import { Column, Entity, Index, PrimaryColumn, VersionColumn } from 'typeorm';
import type { WorkflowStatus } from '../../common/types.js';

@Entity({ name: 'weft_workflows' })
// Enqueued rows are the queue indexes' (docs/decisions/0052).
@Index('weft_workflows_status_type_idx', ['status', 'type'], { where: "status <> 'enqueued'" })
@Index('weft_workflows_parent_idx', ['parentId'], { where: 'parent_id IS NOT NULL' })
@Index('weft_workflows_created_idx', ['createdAt', 'id'])
@Index('weft_workflows_ended_idx', ['status', 'completedAt'], { where: 'completed_at IS NOT NULL' })
@Index('weft_workflows_enqueued_idx', ['queue', 'priority', 'createdAt', 'id'], { where: "status = 'enqueued'" })
// GIN with jsonb_path_ops, which TypeORM cannot declare: the migration creates it (migration 1734177840000).
@Index('weft_workflows_attributes_idx', { synchronize: false })
// The running indexes lead with status, which stays an index condition (docs/decisions/0056).
@Index('weft_workflows_queue_running_idx', ['status', 'queue'], { where: "status IN ('running', 'suspended') AND queue IS NOT NULL" })
@Index('weft_workflows_partition_enqueued_idx', ['queue', 'partitionKey', 'priority', 'createdAt', 'id'], {
  where: "status = 'enqueued' AND partition_key IS NOT NULL",
})
@Index('weft_workflows_partition_running_idx', ['status', 'queue', 'partitionKey'], {
  where: "status IN ('running', 'suspended') AND partition_key IS NOT NULL",
})
@Index('weft_workflows_singleton_idx', ['type', 'singletonKey'], {
  unique: true,
  where: "singleton_key IS NOT NULL AND status IN ('pending', 'enqueued', 'running', 'suspended')",
})
@Index('weft_workflows_debounce_idx', ['type', 'debounceKey'], { unique: true, where: "debounce_key IS NOT NULL AND status = 'pending'" })
// Names enqueued (no such row waits) so that status_type_idx serves no probe of it (docs/decisions/0061).
@Index('weft_workflows_singleton_wait_idx', ['type', 'singletonWait', 'createdAt', 'id'], {
  where: "singleton_wait IS NOT NULL AND status IN ('pending', 'enqueued')",
})
@Index('weft_workflows_partition_admitted_idx', ['queue', 'partitionKey', 'admittedAt'], {
  where: 'admitted_at IS NOT NULL AND partition_key IS NOT NULL',
})
@Index('weft_workflows_slot_wanted_idx', ['queue', 'slotWantedAt', 'id'], { where: "status = 'running' AND slot_wanted_at IS NOT NULL" })
export class WorkflowEntity {
  @PrimaryColumn({ type: 'varchar', length: 255 })
  id!: string;

  @Column({ type: 'varchar', length: 255 })
  type!: string;

  @Column({ type: 'varchar', length: 16 })
  status!: WorkflowStatus;

  @Column({ type: 'json', nullable: true })
  input!: unknown;

  @Column({ type: 'json', nullable: true })
  output!: unknown;

  @Column({ type: 'json', nullable: true })
  error!: unknown;

  @Column({ name: 'parent_id', type: 'varchar', length: 255, nullable: true })
  parentId!: string | null;

  @Column({ name: 'run_number', type: 'integer', default: 1 })
  runNumber!: number;

  @Column({ type: 'timestamptz', nullable: true })
  deadline!: Date | null;

  @Column({ name: 'start_at', type: 'timestamptz', nullable: true })
  startAt!: Date | null;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt!: Date | null;

  /** What the current run set with ctx.setAttributes; null until it sets one. */
  @Column({ type: 'jsonb', nullable: true })
  attributes!: Record<string, string | number | boolean> | null;

  /** engine.fork: the workflow, run and seq this one was forked from. */
  @Column({ name: 'forked_from', type: 'jsonb', nullable: true })
  forkedFrom!: { workflowId: string; runNumber: number; fromSeq: number } | null;

  /** engine.retry: the run this one retried and the seq it ran again from. */
  @Column({ name: 'retried_from', type: 'jsonb', nullable: true })
  retriedFrom!: { runNumber: number; fromSeq: number } | null;

  /** W3C traceparent of the run's latest workflow span that committed, or of its starter (tracing). */
  @Column({ name: 'trace_context', type: 'varchar', length: 64, nullable: true })
  traceContext!: string | null;

  /** The headers its start's interceptors left (a payload: encoded when a codec is set); null when none. */
  @Column({ type: 'json', nullable: true })
  headers!: unknown;

  /** `@Workflow(name, { version })` of the code that started this run. */
  @Column({ name: 'workflow_version', type: 'varchar', length: 64, nullable: true })
  workflowVersion!: string | null;

  /** The queue that admits it (docs/queues.md); null outside a queue. */
  @Column({ type: 'varchar', length: 255, nullable: true })
  queue!: string | null;

  /** Within a partitioned queue, the key (tenant) whose own limits it counts against. */
  @Column({ name: 'partition_key', type: 'varchar', length: 255, nullable: true })
  partitionKey!: string | null;

  /** At most one live workflow of a type holds a singleton key. */
  @Column({ name: 'singleton_key', type: 'varchar', length: 255, nullable: true })
  singletonKey!: string | null;

  /** A singleton start queued behind the live holder of this key (onConflict 'queue'): it starts once it holds the key. */
  @Column({ name: 'singleton_wait', type: 'varchar', length: 255, nullable: true })
  singletonWait!: string | null;

  /** A debounced start waiting for its window to close: one pending workflow of a type per key. */
  @Column({ name: 'debounce_key', type: 'varchar', length: 255, nullable: true })
  debounceKey!: string | null;

  /** The latest a debounced start may be pushed to (`maxDelay` after its first call). */
  @Column({ name: 'debounce_until', type: 'timestamptz', nullable: true })
  debounceUntil!: Date | null;

  /** Within its queue, higher is admitted first. */
  @Column({ type: 'integer', default: 0 })
  priority!: number;

  /** When its queue admitted it (enqueued → running). */
  @Column({ name: 'admitted_at', type: 'timestamptz', nullable: true })
  admittedAt!: Date | null;

  /** Parked in a `releaseWhileWaiting` queue: its slot is free for others until it takes one again. */
  @Column({ name: 'slot_released_at', type: 'timestamptz', nullable: true })
  slotReleasedAt!: Date | null;

  /** Woken while its slot was released: it waits for one, ahead of the queue's enqueued work. */
  @Column({ name: 'slot_wanted_at', type: 'timestamptz', nullable: true })
  slotWantedAt!: Date | null;

  /** The epoch a fenced write must carry: its claim's while the claim has a holder, else null (docs/decisions/0008). */
  @Column({ name: 'fence_epoch', type: 'bigint', nullable: true })
  fenceEpoch!: string | null;

  @VersionColumn({ type: 'integer', default: 1 })
  version!: number;
}
