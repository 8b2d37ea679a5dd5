import { Inject, Injectable, Logger } from '@nestjs/common';
import { currentStep, Step } from '@weft/nest';
import { randomUUID } from 'node:crypto';
import { demoConfig, type DemoConfig } from '../config/demo.config.js';
import { CardDeclinedError, Charge, PaymentGatewayTimeoutError } from './order.types.js';

const DECLINE_ABOVE_CENTS = 1_000_000;

/**
 * A fake payment provider. Its methods are durable steps inside a workflow (recorded once,
 * retried with backoff) and plain calls anywhere else.
 */
@Injectable()
export class PaymentsService {
  private readonly logger = new Logger('Payments');
  /** The provider's own idempotency: the same key never charges twice. */
  private readonly byKey = new Map<string, Charge>();
  /** DEMO_PAYMENT_FAILURE_RATE: the share of charges that time out. */
  private readonly failureRate: number;

  constructor(@Inject(demoConfig.KEY) config: DemoConfig) {
    this.failureRate = config.paymentFailureRate;
  }

  @Step({
    retry: { maxAttempts: 5, initialInterval: '200ms', backoffCoefficient: 2, nonRetryable: ['CardDeclinedError'] },
    timeout: '10s',
  })
  async charge(orderId: string, amount: number): Promise<Charge> {
    const step = currentStep();
    const key = step?.idempotencyKey ?? `direct:${orderId}`;
    const known = this.byKey.get(key);
    if (known) return known;
    if (amount > DECLINE_ABOVE_CENTS) throw new CardDeclinedError(`card declined for ${amount} cents`);
    if (Math.random() < this.failureRate) {
      this.logger.warn(`Gateway timeout charging ${orderId} (attempt ${step?.attempt ?? 1}); Weft retries`);
      throw new PaymentGatewayTimeoutError('payment gateway timed out');
    }
    const charge = { chargeId: `ch_${randomUUID().slice(0, 8)}`, orderId, amount };
    this.byKey.set(key, charge);
    this.logger.log(`Charged ${amount} cents for ${orderId} (${charge.chargeId}, key ${key})`);
    return charge;
  }

  @Step({ retry: { maxAttempts: 10, initialInterval: '500ms', maxInterval: '10s' } })
  async refund(chargeId: string): Promise<{ refundId: string; chargeId: string }> {
    this.logger.log(`Refunded ${chargeId}`);
    return { refundId: `re_${randomUUID().slice(0, 8)}`, chargeId };
  }
}
