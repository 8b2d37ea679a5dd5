import { Body, Controller, Get, Param, Post, UseFilters } from '@nestjs/common';
import { WeftEngine, WeftExceptionFilter, WorkflowDescription } from '@weft/nest';
import { parseOrderRequest } from './order-request';
import { ORDER_WORKFLOW } from './order.workflow';

const workflowIdOf = (orderId: string) => `order-${orderId}`;

/** What the order is doing, read from its recorded history. */
function stageOf(d: WorkflowDescription): string {
  const output = d.output as { status?: string } | null;
  if (d.status === 'completed' && output?.status) return output.status;
  if (d.status !== 'running') return d.status;
  const last = d.history[d.history.length - 1]?.name;
  const next: Record<string, string> = { 'WarehouseService.reserve': 'charging', 'PaymentsService.charge': 'packing', sleep: 'shipping' };
  return last === undefined ? 'reserving' : (next[last] ?? 'finishing');
}

@Controller('orders')
@UseFilters(WeftExceptionFilter) // Weft errors become 400/404/409/503 with { statusCode, code, message }
export class OrdersController {
  private readonly packingDelay = process.env.DEMO_PACKING_DELAY ?? '5s';

  constructor(private readonly engine: WeftEngine) {}

  /** Places an order; placing the same orderId again returns the same workflow. */
  @Post()
  async place(@Body() body: unknown) {
    const order = parseOrderRequest(body, this.packingDelay);
    const handle = await this.engine.start(ORDER_WORKFLOW, order, { workflowId: workflowIdOf(order.orderId) });
    return { orderId: order.orderId, workflowId: handle.workflowId, statusUrl: `/orders/${order.orderId}` };
  }

  @Get(':orderId')
  async status(@Param('orderId') orderId: string) {
    const d = await this.engine.describe(workflowIdOf(orderId));
    return {
      orderId,
      workflowId: d.workflowId,
      status: d.status,
      stage: stageOf(d),
      result: d.output,
      error: d.error,
      steps: d.history.map((op) => ({ name: op.name, status: op.status, attempts: op.attempts ?? 1 })),
      createdAt: d.createdAt,
      updatedAt: d.updatedAt,
    };
  }
}
