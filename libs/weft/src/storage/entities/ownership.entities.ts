import { Column, Entity, PrimaryColumn, VersionColumn } from 'typeorm';

/** Per-workflow claim. Rows are never deleted and `epoch` only grows. No index but the key: see migration 1733918000000. */
@Entity({ name: 'weft_workflow_claims' })
export class WorkflowClaimEntity {
  @PrimaryColumn({ name: 'workflow_id', type: 'varchar', length: 255 })
  workflowId!: string;

  @Column({ type: 'bigint', default: 0 })
  epoch!: string;

  @Column({ name: 'engine_id', type: 'varchar', length: 255, nullable: true })
  engineId!: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;

  @Column({ name: 'claimed_at', type: 'timestamptz', nullable: true })
  claimedAt!: Date | null;

  @VersionColumn({ type: 'integer', default: 1 })
  version!: number;
}

@Entity({ name: 'weft_global_lease' })
export class GlobalLeaseEntity {
  @PrimaryColumn({ type: 'smallint', default: 1 })
  id!: number;

  @Column({ type: 'bigint', default: 0 })
  epoch!: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  holder!: string | null;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt!: Date | null;
}

@Entity({ name: 'weft_ownership_marker' })
export class OwnershipMarkerEntity {
  @PrimaryColumn({ type: 'smallint', default: 1 })
  id!: number;

  @Column({ type: 'varchar', length: 32 })
  mode!: string;

  @Column({ name: 'established_at', type: 'timestamptz', default: () => 'now()' })
  establishedAt!: Date;
}
