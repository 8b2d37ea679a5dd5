import { Duration, Workflow, WorkflowContext } from '@weft/nest';
import { ReportsService } from './reports.service.js';

export interface CarrierPollerInput {
  /** The carrier feed's position: the only state carried from one run to the next. */
  cursor: number;
  /** Poll interval (a duration); short in tests. */
  every: Duration;
}

/** Polls per run: after this many, the run continues as new, so its history stays this small. */
export const POLLS_PER_RUN = 50;

/**
 * A poller that runs for as long as the service does: every `every` it reads the carrier's
 * tracking feed from `cursor` on. A workflow that loops forever would record two operations
 * per poll without end; instead each run polls 50 times and then continues as new with its
 * cursor, which ends the run and starts the next one (same id, a fresh history) in one commit.
 */
@Workflow('carrier-poller')
export class CarrierPollerWorkflow {
  constructor(private readonly reports: ReportsService) {}

  async run(ctx: WorkflowContext, input: CarrierPollerInput) {
    let cursor = input.cursor;
    for (let i = 0; i < POLLS_PER_RUN; i++) {
      cursor = await this.reports.pollCarrier(cursor);
      await ctx.sleep(input.every);
    }
    return ctx.continueAsNew({ ...input, cursor });
  }
}
