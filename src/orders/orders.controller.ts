import { Body, Controller, Get, HttpCode, Inject, Param, Post, UseFilters, UsePipes } from '@nestjs/common';
import { WeftEngine, WeftExceptionFilter } from '@weft/nest';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { demoConfig, type DemoConfig } from '../config/demo.config.js';
import { RequestValidationPipe } from '../request-validation.js';
import { ApproveOrderDto, PlaceOrderDto } from './order-request.dto.js';
import { OrderLedger } from './order-ledger.service.js';
import { ORDER_WORKFLOW } from './order.workflow.js';
import type { OrderInput } from './order.types.js';

const workflowIdOf = (orderId: string) => `order-${orderId}`;

@Controller('orders')
@UsePipes(new RequestValidationPipe()) // bodies become their DTOs, or a 400 DEMO_INVALID_REQUEST
@UseFilters(WeftExceptionFilter) // Weft errors become 400/404/409/503 with { statusCode, code, message }
export class OrdersController {
  constructor(
    private readonly engine: WeftEngine,
    private readonly dataSource: DataSource,
    private readonly ledger: OrderLedger,
    @Inject(demoConfig.KEY) private readonly config: DemoConfig,
  ) {}

  /**
   * Places an order: its row and its workflow in one transaction (`{ manager }`), so neither
   * exists without the other. Placing the same orderId again returns the same workflow.
   */
  @Post()
  async place(@Body() body: PlaceOrderDto) {
    const order: OrderInput = {
      orderId: body.orderId ?? randomUUID(),
      items: body.items.map(({ sku, quantity }) => ({ sku, quantity })),
      amount: body.amount,
      address: body.address,
      ...this.config.orders,
    };
    const handle = await this.dataSource.transaction(async (manager) => {
      await this.ledger.place(manager, order.orderId, order.amount);
      return this.engine.start(ORDER_WORKFLOW, order, { workflowId: workflowIdOf(order.orderId), manager });
    });
    return { orderId: order.orderId, workflowId: handle.workflowId, statusUrl: `/orders/${order.orderId}` };
  }

  /** Approves a large order waiting for it: a durable signal, delivered to its handler. */
  @Post(':orderId/approve')
  @HttpCode(202)
  async approve(@Param('orderId') orderId: string, @Body() body: ApproveOrderDto) {
    await this.engine.signal(workflowIdOf(orderId), 'approve', body.by ?? 'anonymous');
    return { orderId, approved: true };
  }

  @Get(':orderId')
  async status(@Param('orderId') orderId: string) {
    const d = await this.engine.describe(workflowIdOf(orderId));
    // The 'status' query: answered from the live instance, or by replay on any engine.
    const live =
      d.status === 'running' ? await this.engine.query<{ stage: string; approvedBy: string | null }>(d.workflowId, 'status') : null;
    const output = d.output as { status?: string } | null;
    const record = await this.ledger.find(orderId);
    return {
      orderId,
      workflowId: d.workflowId,
      status: d.status,
      stage: live?.stage ?? output?.status ?? d.status,
      approvedBy: live?.approvedBy ?? null,
      // The demo's own row, written by the request's transaction and the transactional steps.
      record: record && { status: record.status, chargeId: record.chargeId, trackingNumber: record.trackingNumber, writes: record.writes },
      result: d.output,
      error: d.error,
      steps: d.history.map((op) => ({ name: op.name, status: op.status, attempts: op.attempts ?? 1 })),
      createdAt: d.createdAt,
      updatedAt: d.updatedAt,
    };
  }
}
