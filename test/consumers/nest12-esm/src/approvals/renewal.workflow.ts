import { Workflow, WorkflowContext } from '@weft/nest';
import { GreetingService } from './greeting.service.js';

export const RENEWAL_WORKFLOW = 'renewal';

/** Greets, sleeps 30 days, then waits up to 7 days for the 'renew' signal. */
@Workflow(RENEWAL_WORKFLOW)
export class RenewalWorkflow {
  constructor(private readonly greetings: GreetingService) {}

  async run(
    ctx: WorkflowContext,
    input: { name: string },
  ): Promise<{ greeting: string; renewedBy: string | null }> {
    const greeting = await this.greetings.compose(input.name);
    await ctx.sleep('30d');
    const renewedBy = await ctx.waitForSignal<string>('renew', {
      timeout: '7d',
    });
    return { greeting, renewedBy };
  }
}
