import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A running step's last heartbeat, attempt and first start (docs/long-steps.md): what the engine
 * that takes the workflow over resumes the step from. Written in batches by the engine that runs
 * the step; removed when the step ends, or with the workflow (ON DELETE CASCADE).
 */
@Entity({ name: 'weft_step_progress' })
export class StepProgressEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @PrimaryColumn({ name: 'run_number', type: 'integer' })
  runNumber!: number;

  @PrimaryColumn({ type: 'integer' })
  seq!: number;

  /** The attempt that wrote it last. */
  @Column({ type: 'integer' })
  attempt!: number;

  /** The first attempt's start: retry.maxElapsed counts from it. */
  @Column({ name: 'first_started_at', type: 'timestamptz' })
  firstStartedAt!: Date;

  /** Whether a heartbeat gave details (`details` may be JSON null). */
  @Column({ name: 'has_details', type: 'boolean', default: false })
  hasDetails!: boolean;

  @Column({ type: 'json', nullable: true })
  details!: unknown;

  /** engine.completeStep / failStep's outcome, `{ ok, value }` or `{ ok: false, error }`, written once. */
  @Column({ type: 'json', nullable: true })
  completion!: unknown;

  @Column({ name: 'beat_at', type: 'timestamptz', default: () => 'now()' })
  beatAt!: Date;
}
