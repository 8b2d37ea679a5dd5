import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** `cancel-deadline`: a cancelled workflow's cancelGracePeriod runs out (docs/cancellation.md). */
export type TimerKind = 'sleep' | 'message-timeout' | 'delayed-start' | 'execution-deadline' | 'cancel-deadline';

@Entity({ name: 'weft_timers' })
@Index('weft_timers_fire_at_idx', ['fireAt'])
@Index('weft_timers_workflow_seq_uq', ['workflowId', 'kind', 'seq'], { unique: true })
export class TimerEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @Column({ type: 'varchar', length: 24 })
  kind!: TimerKind;

  /** Operation sequence the timer belongs to; -1 for workflow-level timers. */
  @Column({ type: 'integer', default: -1 })
  seq!: number;

  @Column({ name: 'fire_at', type: 'timestamptz' })
  fireAt!: Date;
}
