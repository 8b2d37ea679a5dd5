import { Workflow, WorkflowContext } from '@weft/nest';
import { WarehouseService } from './warehouse.service.js';

export const SHIPMENT_WORKFLOW = 'shipment';

export interface ShipmentInput {
  orderId: string;
  address: string;
}

/** A child workflow: its own history and owner; its result reaches the order as a durable message. */
@Workflow(SHIPMENT_WORKFLOW)
export class ShipmentWorkflow {
  constructor(private readonly warehouse: WarehouseService) {}

  async run(_ctx: WorkflowContext, input: ShipmentInput): Promise<{ trackingNumber: string }> {
    return this.warehouse.ship(input.orderId, input.address);
  }
}
