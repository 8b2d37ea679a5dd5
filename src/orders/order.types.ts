import type { Duration } from '@weft/nest';

export interface OrderItem {
  sku: string;
  quantity: number;
}

export interface OrderInput {
  orderId: string;
  items: OrderItem[];
  /** In cents. */
  amount: number;
  address: string;
  /** How long packing takes: a durable timer ('5s', '1h', ...). */
  packingDelay: Duration;
  /** Orders of at least this amount wait for an 'approve' signal... */
  approvalThreshold: number;
  /** ...for at most this long. */
  approvalTimeout: Duration;
}

export type OrderStage =
  | 'received'
  | 'reserving'
  | 'charging'
  | 'awaiting-approval'
  | 'packing'
  | 'shipping'
  | 'shipped'
  | 'payment-failed'
  | 'refunded'
  | 'expired';

export type OrderResult =
  | { status: 'shipped'; chargeId: string; trackingNumber: string }
  | { status: 'payment-failed'; reason: string }
  | { status: 'refunded'; chargeId: string; reason: string }
  | { status: 'expired'; chargeId: string; reason: string };

export interface Charge {
  chargeId: string;
  orderId: string;
  amount: number;
}

/** Named errors: `nonRetryable` matches on `err.name`. */
export class CardDeclinedError extends Error {
  override readonly name = 'CardDeclinedError';
}

export class PaymentGatewayTimeoutError extends Error {
  override readonly name = 'PaymentGatewayTimeoutError';
}

export class UndeliverableError extends Error {
  override readonly name = 'UndeliverableError';
}
