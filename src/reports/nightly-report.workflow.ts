import { Schedule, Workflow, WorkflowContext } from '@weft/nest';
import { ReportsService } from './reports.service.js';

/**
 * Every night at 03:00 Berlin time (daylight saving included), whichever replica gets there
 * first runs it, once. `catchupWindow`: after an outage, a report up to 6 hours late still runs.
 */
@Workflow('nightly-report')
@Schedule({ id: 'nightly-report', cron: '0 3 * * *', timezone: 'Europe/Berlin', catchupWindow: '6h' })
export class NightlyReportWorkflow {
  constructor(private readonly reports: ReportsService) {}

  async run(ctx: WorkflowContext) {
    const orders = await this.reports.orderCounts();
    // The fire time is in the workflow id (`nightly-report@2026-12-04T02:00:00.000Z`): the same on replay.
    const at = ctx.workflowId.slice(ctx.workflowId.indexOf('@') + 1);
    await this.reports.publish({ at, orders });
    return { at, orders };
  }
}
