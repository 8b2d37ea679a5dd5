import { Injectable, Logger } from '@nestjs/common';
import { Step } from '@weft/nest';
import { randomUUID } from 'node:crypto';
import { OrderItem, UndeliverableError } from './order.types.js';

/** A fake warehouse: stock reservations and shipping, each call a durable step inside a workflow. */
@Injectable()
export class WarehouseService {
  private readonly logger = new Logger('Warehouse');

  @Step({ retry: { maxAttempts: 3, initialInterval: '100ms' } })
  async reserve(orderId: string, items: OrderItem[]): Promise<{ reservationId: string }> {
    const units = items.reduce((n, i) => n + i.quantity, 0);
    this.logger.log(`Reserved ${units} unit(s) for ${orderId}`);
    return { reservationId: `rs_${randomUUID().slice(0, 8)}` };
  }

  @Step({ retry: { maxAttempts: 10, initialInterval: '500ms', maxInterval: '10s' } })
  async release(reservationId: string): Promise<{ released: string }> {
    this.logger.log(`Released ${reservationId}`);
    return { released: reservationId };
  }

  @Step({ retry: { maxAttempts: 5, initialInterval: '500ms', nonRetryable: ['UndeliverableError'] } })
  async ship(orderId: string, address: string): Promise<{ trackingNumber: string }> {
    if (/nowhere/i.test(address)) throw new UndeliverableError(`no carrier delivers to "${address}"`);
    const trackingNumber = `TRK${randomUUID().replace(/-/g, '').slice(0, 10).toUpperCase()}`;
    this.logger.log(`Shipped ${orderId} to ${address} (${trackingNumber})`);
    return { trackingNumber };
  }
}
