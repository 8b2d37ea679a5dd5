import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * ctx.setEvent: the latest value of each key a workflow published (docs/events-and-streams.md).
 * Written by the advance statement that carries the call; removed with the workflow (ON DELETE CASCADE).
 */
@Entity({ name: 'weft_events' })
export class EventEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  key!: string;

  @Column({ type: 'json', nullable: true })
  value!: unknown;

  /** The setEvent operation's seq in the run that set it. */
  @Column({ type: 'integer' })
  seq!: number;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
