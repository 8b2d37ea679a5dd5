import { Column, Entity, Index, PrimaryColumn, VersionColumn } from 'typeorm';

@Entity({ name: 'weft_schedules' })
@Index('weft_schedules_due_idx', ['nextFireAt'], { where: 'NOT paused' })
export class ScheduleEntity {
  @PrimaryColumn({ type: 'varchar', length: 255 })
  id!: string;

  @Column({ name: 'workflow_type', type: 'varchar', length: 255 })
  workflowType!: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  cron!: string | null;

  @Column({ name: 'every_ms', type: 'bigint', nullable: true })
  everyMs!: string | null;

  @Column({ type: 'varchar', length: 64, nullable: true })
  timezone!: string | null;

  @Column({ type: 'json', nullable: true })
  input!: unknown;

  @Column({ type: 'varchar', length: 16, default: 'skip' })
  overlap!: string;

  @Column({ name: 'catchup_window_ms', type: 'bigint', nullable: true })
  catchupWindowMs!: string | null;

  @Column({ type: 'boolean', default: false })
  paused!: boolean;

  @Column({ type: 'varchar', length: 16, default: 'api' })
  source!: string;

  @Column({ name: 'next_fire_at', type: 'timestamptz' })
  nextFireAt!: Date;

  @Column({ name: 'buffered_fire_at', type: 'timestamptz', nullable: true })
  bufferedFireAt!: Date | null;

  @Column({ name: 'last_workflow_id', type: 'varchar', length: 255, nullable: true })
  lastWorkflowId!: string | null;

  @Column({ name: 'recent_runs', type: 'json', default: () => "'[]'" })
  recentRuns!: unknown;

  @Column({ name: 'pending_triggers', type: 'json', default: () => "'[]'" })
  pendingTriggers!: unknown;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;

  @VersionColumn({ type: 'integer', default: 1 })
  version!: number;
}
