import { Module } from '@nestjs/common';
import { OrderWorkflow } from './order.workflow';
import { OrdersController } from './orders.controller';
import { PaymentsService } from './payments.service';
import { ShipmentWorkflow } from './shipment.workflow';
import { WarehouseService } from './warehouse.service';

@Module({
  providers: [PaymentsService, WarehouseService, OrderWorkflow, ShipmentWorkflow],
  controllers: [OrdersController],
})
export class OrdersModule {}
