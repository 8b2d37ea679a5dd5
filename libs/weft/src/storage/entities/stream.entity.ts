import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A stream of a workflow (ctx.writeStream): its next offset and whether it is closed. The counter
 * row serializes writers of one (workflow, key), so offsets are dense from 0 (docs/events-and-streams.md).
 */
@Entity({ name: 'weft_streams' })
export class StreamEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  key!: string;

  @Column({ name: 'next_offset', type: 'integer', default: 0 })
  nextOffset!: number;

  @Column({ type: 'boolean', default: false })
  closed!: boolean;
}

/** One entry of a stream; removed with its workflow (ON DELETE CASCADE). */
@Entity({ name: 'weft_stream_entries' })
export class StreamEntryEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @PrimaryColumn({ type: 'varchar', length: 255 })
  key!: string;

  @PrimaryColumn({ type: 'integer' })
  offset!: number;

  @Column({ type: 'json', nullable: true })
  value!: unknown;

  /** The step attempt that wrote it (a step body's write, at least once); null from workflow code. */
  @Column({ type: 'integer', nullable: true })
  attempt!: number | null;

  @Column({ type: 'timestamptz', default: () => 'now()' })
  at!: Date;
}
