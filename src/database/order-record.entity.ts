import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** The demo's own table of orders, in its own schema beside Weft's: written by transactional steps. */
@Entity({ schema: 'demo', name: 'orders' })
export class OrderRecord {
  @PrimaryColumn({ name: 'order_id', type: 'varchar', length: 64 })
  orderId!: string;

  /** 'received' when the request's transaction placed it; the workflow's stages after that. */
  @Column({ type: 'varchar', length: 32 })
  status!: string;

  /** In cents. */
  @Column({ type: 'integer' })
  amount!: number;

  @Column({ name: 'charge_id', type: 'varchar', length: 64, nullable: true })
  chargeId!: string | null;

  @Column({ name: 'tracking_number', type: 'varchar', length: 64, nullable: true })
  trackingNumber!: string | null;

  /** How many times a transactional step wrote this row: exactly once each, so 1 + the steps that ran. */
  @Column({ type: 'integer', default: 0 })
  writes!: number;

  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' })
  createdAt!: Date;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' })
  updatedAt!: Date;
}
