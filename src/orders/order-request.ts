import { InvalidArgumentError } from '@weft/nest';
import { randomUUID } from 'node:crypto';
import type { Duration } from '@weft/nest';
import type { OrderInput, OrderItem } from './order.types.js';

const FIELDS = ['orderId', 'items', 'amount', 'address'];

function items(v: unknown): OrderItem[] {
  if (!Array.isArray(v) || v.length === 0 || v.length > 100) throw new InvalidArgumentError('items', 'must be 1 to 100 { sku, quantity }');
  return v.map((item: unknown, i) => {
    const it = item as Partial<OrderItem> | null;
    if (!it || typeof it.sku !== 'string' || !it.sku || !Number.isInteger(it.quantity) || (it.quantity as number) < 1) {
      throw new InvalidArgumentError(`items[${i}]`, 'must be { sku: string, quantity: positive integer }');
    }
    return { sku: it.sku, quantity: it.quantity as number };
  });
}

/** Hand validation of `POST /orders`; the packing delay comes from the server's configuration. */
export function parseOrderRequest(
  body: unknown,
  config: { packingDelay: Duration; approvalThreshold: number; approvalTimeout: Duration },
): OrderInput {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new InvalidArgumentError('order', 'must be a JSON object');
  const b = body as Record<string, unknown>;
  const unknown = Object.keys(b).filter((k) => !FIELDS.includes(k));
  if (unknown.length) throw new InvalidArgumentError('order', `has unknown field(s) ${unknown.join(', ')}`);
  const orderId = b.orderId ?? randomUUID();
  if (typeof orderId !== 'string' || !/^[\w-]{1,64}$/.test(orderId))
    throw new InvalidArgumentError('orderId', 'must be 1-64 of [A-Za-z0-9_-]');
  if (!Number.isInteger(b.amount) || (b.amount as number) < 1)
    throw new InvalidArgumentError('amount', 'must be a positive integer (cents)');
  if (typeof b.address !== 'string' || b.address.trim().length === 0)
    throw new InvalidArgumentError('address', 'must be a non-empty string');
  return { orderId, items: items(b.items), amount: b.amount as number, address: b.address.trim(), ...config };
}
