import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One recorded ctx call: the history replay reads back. */
@Entity({ name: 'weft_operations' })
export class OperationEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @PrimaryColumn({ type: 'integer' })
  seq!: number;

  @Column({ type: 'varchar', length: 32 })
  kind!: string;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ type: 'varchar', length: 16 })
  status!: 'completed' | 'failed';

  @Column({ type: 'json', nullable: true })
  result!: unknown;

  @Column({ type: 'json', nullable: true })
  error!: unknown;

  @Column({ type: 'integer', default: 1 })
  attempts!: number;

  /** Order of resolution in the live run; replay releases results in this order. */
  @Column({ type: 'integer', nullable: true })
  event!: number | null;

  @Column({ name: 'started_at', type: 'timestamptz', nullable: true })
  startedAt!: Date | null;

  @Column({ name: 'completed_at', type: 'timestamptz', default: () => 'now()' })
  completedAt!: Date;
}
