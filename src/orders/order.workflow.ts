import { QueryHandler, SignalHandler, Workflow, WorkflowContext } from '@weft/nest';
import { OrderLedger } from './order-ledger.service.js';
import { Charge, OrderInput, OrderResult, OrderStage } from './order.types.js';
import { PaymentsService } from './payments.service.js';
import { SHIPMENT_WORKFLOW } from './shipment.workflow.js';
import { WarehouseService } from './warehouse.service.js';

export const ORDER_WORKFLOW = 'order-fulfilment';
/** Declared in app.module.ts's `queues`: orders reach the payment provider at the rate it allows. */
export const PAYMENTS_QUEUE = 'payments';

/**
 * Reserve stock, charge (retried with backoff), wait for approval if the order is large (a
 * signal handler and a condition with a timeout), pack (a durable timer), ship (a child
 * workflow); compensate with release and refund when a later stage fails. The order's row is
 * written by transactional steps (the charge, the outcome): exactly once, with their records. A
 * fresh instance runs every execution and replay, so the fields are per-order state. Orders are
 * admitted through the payments queue.
 */
@Workflow(ORDER_WORKFLOW, { description: 'reserve, charge, pack, ship', queue: PAYMENTS_QUEUE })
export class OrderWorkflow {
  private stage: OrderStage = 'received';
  private approvedBy: string | null = null;

  constructor(
    private readonly warehouse: WarehouseService,
    private readonly payments: PaymentsService,
    private readonly ledger: OrderLedger,
  ) {}

  async run(ctx: WorkflowContext, order: OrderInput): Promise<OrderResult> {
    const result = await this.fulfil(ctx, order);
    await this.ledger.recordOutcome(order.orderId, result);
    return result;
  }

  private async fulfil(ctx: WorkflowContext, order: OrderInput): Promise<OrderResult> {
    this.stage = 'reserving';
    const { reservationId } = await this.warehouse.reserve(order.orderId, order.items);

    this.stage = 'charging';
    let charge: Charge;
    try {
      charge = await this.payments.charge(order.orderId, order.amount);
    } catch (err) {
      await this.warehouse.release(reservationId);
      this.stage = 'payment-failed';
      return { status: 'payment-failed', reason: (err as Error).message };
    }
    await this.ledger.recordCharge(order.orderId, charge.chargeId);

    if (order.amount >= order.approvalThreshold) {
      // Large orders wait for a person: POST /orders/:id/approve sends the 'approve' signal.
      this.stage = 'awaiting-approval';
      const approved = await ctx.condition(() => this.approvedBy !== null, { timeout: order.approvalTimeout });
      if (!approved) {
        await this.payments.refund(charge.chargeId);
        await this.warehouse.release(reservationId);
        this.stage = 'expired';
        return { status: 'expired', chargeId: charge.chargeId, reason: `not approved within ${order.approvalTimeout}` };
      }
    }

    this.stage = 'packing';
    await ctx.sleep(order.packingDelay);

    this.stage = 'shipping';
    try {
      const { trackingNumber } = await ctx.executeChild<{ trackingNumber: string }>(SHIPMENT_WORKFLOW, {
        orderId: order.orderId,
        address: order.address,
      });
      this.stage = 'shipped';
      return { status: 'shipped', chargeId: charge.chargeId, trackingNumber };
    } catch (err) {
      await this.payments.refund(charge.chargeId);
      await this.warehouse.release(reservationId);
      this.stage = 'refunded';
      return { status: 'refunded', chargeId: charge.chargeId, reason: (err as Error).message };
    }
  }

  @SignalHandler('approve')
  approve(by: string): void {
    this.approvedBy = by;
  }

  @QueryHandler('status')
  status(): { stage: OrderStage; approvedBy: string | null } {
    return { stage: this.stage, approvedBy: this.approvedBy };
  }
}
