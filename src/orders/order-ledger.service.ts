import { Injectable } from '@nestjs/common';
import { currentStep, Step } from '@weft/nest';
import { DataSource, type EntityManager } from 'typeorm';
import { OrderRecord } from '../database/order-record.entity.js';
import type { OrderResult } from './order.types.js';

/**
 * The demo's orders table. Placing an order writes its row in the request's transaction; the
 * workflow's writes are transactional steps: each commits with the step's record, so it happens
 * exactly once however often the engine crashes, retries or hands the workflow to another replica
 * (docs/transactions.md). The payment charge stays a plain step: a call outside the database.
 */
@Injectable()
export class OrderLedger {
  constructor(private readonly dataSource: DataSource) {}

  /** In the caller's transaction (`manager`): the row of a new order; placing it again keeps the first. */
  async place(manager: EntityManager, orderId: string, amount: number): Promise<void> {
    await manager
      .createQueryBuilder()
      .insert()
      .into(OrderRecord)
      .values({ orderId, amount, status: 'received', chargeId: null, trackingNumber: null, writes: 1 })
      .orIgnore()
      .execute();
  }

  @Step({ transaction: true, retry: { maxAttempts: 5, initialInterval: '200ms' } })
  async recordCharge(orderId: string, chargeId: string): Promise<{ orderId: string; status: string }> {
    await this.update(orderId, { status: 'charged', chargeId });
    return { orderId, status: 'charged' };
  }

  @Step({ transaction: true, retry: { maxAttempts: 5, initialInterval: '200ms' } })
  async recordOutcome(orderId: string, result: OrderResult): Promise<{ orderId: string; status: string }> {
    await this.update(orderId, { status: result.status, trackingNumber: result.status === 'shipped' ? result.trackingNumber : null });
    return { orderId, status: result.status };
  }

  /** The order's row as it is now (null: never placed, or placed in a transaction that rolled back). */
  find(orderId: string): Promise<OrderRecord | null> {
    return this.dataSource.getRepository(OrderRecord).findOneBy({ orderId });
  }

  private async update(orderId: string, change: Partial<OrderRecord>): Promise<void> {
    // The step's transaction; outside a workflow (a plain call) the app's own DataSource.
    const manager = currentStep()?.manager ?? this.dataSource.manager;
    await manager
      .getRepository(OrderRecord)
      .createQueryBuilder()
      .update()
      .set({ ...change, writes: () => 'writes + 1' })
      .where('order_id = :orderId', { orderId })
      .execute();
  }
}
