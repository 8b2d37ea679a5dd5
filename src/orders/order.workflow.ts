import { QueryHandler, SignalHandler, Workflow, WorkflowContext } from '@weft/nest';
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
 * workflow); compensate with release and refund when a later stage fails. A fresh instance runs every execution and
 * replay, so the fields are per-order state. Orders are admitted through the payments queue.
 */
@Workflow(ORDER_WORKFLOW, { description: 'reserve, charge, pack, ship', queue: PAYMENTS_QUEUE })
export class OrderWorkflow {
  private stage: OrderStage = 'received';
  private approvedBy: string | null = null;

  constructor(
    private readonly warehouse: WarehouseService,
    private readonly payments: PaymentsService,
  ) {}

  async run(ctx: WorkflowContext, order: OrderInput): Promise<OrderResult> {
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
