import { Body, Controller, Get, HttpCode, Param, Post, UseFilters } from '@nestjs/common';
import { Duration, WeftEngine, WeftExceptionFilter } from '@weft/nest';
import { parseOrderRequest } from './order-request.js';
import { ORDER_WORKFLOW } from './order.workflow.js';

const workflowIdOf = (orderId: string) => `order-${orderId}`;

@Controller('orders')
@UseFilters(WeftExceptionFilter) // Weft errors become 400/404/409/503 with { statusCode, code, message }
export class OrdersController {
  private readonly config = {
    // Checked by the engine when the order starts (InvalidDurationError on a bad value).
    packingDelay: (process.env.DEMO_PACKING_DELAY ?? '5s') as Duration,
    approvalThreshold: Number(process.env.DEMO_APPROVAL_THRESHOLD ?? 50_000),
    approvalTimeout: (process.env.DEMO_APPROVAL_TIMEOUT ?? '10m') as Duration,
  };

  constructor(private readonly engine: WeftEngine) {}

  /** Places an order; placing the same orderId again returns the same workflow. */
  @Post()
  async place(@Body() body: unknown) {
    const order = parseOrderRequest(body, this.config);
    const handle = await this.engine.start(ORDER_WORKFLOW, order, { workflowId: workflowIdOf(order.orderId) });
    return { orderId: order.orderId, workflowId: handle.workflowId, statusUrl: `/orders/${order.orderId}` };
  }

  /** Approves a large order waiting for it: a durable signal, delivered to its handler. */
  @Post(':orderId/approve')
  @HttpCode(202)
  async approve(@Param('orderId') orderId: string, @Body() body: unknown) {
    const by = (body as { by?: unknown } | null)?.by;
    await this.engine.signal(workflowIdOf(orderId), 'approve', typeof by === 'string' && by ? by : 'anonymous');
    return { orderId, approved: true };
  }

  @Get(':orderId')
  async status(@Param('orderId') orderId: string) {
    const d = await this.engine.describe(workflowIdOf(orderId));
    // The 'status' query: answered from the live instance, or by replay on any engine.
    const live =
      d.status === 'running' ? await this.engine.query<{ stage: string; approvedBy: string | null }>(d.workflowId, 'status') : null;
    const output = d.output as { status?: string } | null;
    return {
      orderId,
      workflowId: d.workflowId,
      status: d.status,
      stage: live?.stage ?? output?.status ?? d.status,
      approvedBy: live?.approvedBy ?? null,
      result: d.output,
      error: d.error,
      steps: d.history.map((op) => ({ name: op.name, status: op.status, attempts: op.attempts ?? 1 })),
      createdAt: d.createdAt,
      updatedAt: d.updatedAt,
    };
  }
}
