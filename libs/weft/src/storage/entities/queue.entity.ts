import { Column, Entity, PrimaryColumn } from 'typeorm';

/** One queue (docs/queues.md): locked by every admission; its log of recent admissions bounds a rate limit. */
@Entity({ name: 'weft_queues' })
export class QueueEntity {
  @PrimaryColumn({ type: 'varchar', length: 255 })
  name!: string;

  /** Admission times inside the rate limit's last period (trimmed at each admission). */
  @Column({ name: 'recent_admissions', type: 'timestamptz', array: true, default: () => "'{}'" })
  recentAdmissions!: Date[];

  /** Partitioned queues: the key the last admission ended on; the next one walks the keys from after it. */
  @Column({ name: 'partition_cursor', type: 'varchar', length: 255, nullable: true })
  partitionCursor!: string | null;

  @Column({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt!: Date;
}
