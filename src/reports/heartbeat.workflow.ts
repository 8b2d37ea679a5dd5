import { Schedule, Workflow, WorkflowContext } from '@weft/nest';
import { ReportsService } from './reports.service.js';

/** Once a minute, on one replica: an interval schedule (`every`), aligned to the clock minute. */
@Workflow('heartbeat')
@Schedule({ id: 'heartbeat', every: '1m' })
export class HeartbeatWorkflow {
  constructor(private readonly reports: ReportsService) {}

  async run(ctx: WorkflowContext) {
    await this.reports.ping(ctx.workflowId);
  }
}
