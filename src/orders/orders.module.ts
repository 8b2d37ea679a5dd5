import { Module } from '@nestjs/common';
import { OrderLedger } from './order-ledger.service.js';
import { OrderWorkflow } from './order.workflow.js';
import { OrdersController } from './orders.controller.js';
import { PaymentsService } from './payments.service.js';
import { ShipmentWorkflow } from './shipment.workflow.js';
import { WarehouseService } from './warehouse.service.js';

@Module({
  providers: [PaymentsService, WarehouseService, OrderLedger, OrderWorkflow, ShipmentWorkflow],
  controllers: [OrdersController],
})
export class OrdersModule {}
