import { Column, Entity, Index, PrimaryGeneratedColumn } from 'typeorm';

/** `cancel`: a cancel request, delivered to the run at its current wait (docs/cancellation.md). */
export type MessageKind = 'signal' | 'update' | 'child' | 'cancel';

/** Signals, update requests and child-completion notices; `id` is the arrival order. */
@Entity({ name: 'weft_messages' })
@Index('weft_messages_unconsumed_idx', ['workflowId', 'id'], { where: 'consumed_seq IS NULL' })
@Index('weft_messages_workflow_idx', ['workflowId'])
export class MessageEntity {
  @PrimaryGeneratedColumn({ type: 'bigint' })
  id!: string;

  @Column({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @Column({ type: 'varchar', length: 16 })
  kind!: MessageKind;

  @Column({ type: 'varchar', length: 255 })
  name!: string;

  @Column({ type: 'json', nullable: true })
  payload!: unknown;

  @Column({ name: 'consumed_seq', type: 'integer', nullable: true })
  consumedSeq!: number | null;

  @Column({ type: 'varchar', length: 16, default: 'pending' })
  status!: string;

  @Column({ type: 'json', nullable: true })
  result!: unknown;

  @Column({ name: 'created_at', type: 'timestamptz', default: () => 'now()' })
  createdAt!: Date;
}
