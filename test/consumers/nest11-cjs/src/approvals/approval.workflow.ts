import {
  QueryHandler,
  SignalHandler,
  Workflow,
  WorkflowContext,
} from '@weft/nest';
import { GreetingService } from './greeting.service';

export const APPROVAL_WORKFLOW = 'approval';

export type ApprovalStage =
  'composing' | 'awaiting-approval' | 'pausing' | 'done';

export interface ApprovalResult {
  greeting: string;
  approvedBy: string;
}

/** Compose a greeting (a step on an injected provider), wait for the 'approve' signal, pause durably, return. */
@Workflow(APPROVAL_WORKFLOW)
export class ApprovalWorkflow {
  private stage: ApprovalStage = 'composing';
  private approvedBy: string | null = null;

  constructor(private readonly greetings: GreetingService) {}

  async run(
    ctx: WorkflowContext,
    input: { name: string },
  ): Promise<ApprovalResult> {
    const greeting = await this.greetings.compose(input.name);
    this.stage = 'awaiting-approval';
    await ctx.condition(() => this.approvedBy !== null);
    this.stage = 'pausing';
    await ctx.sleep('1s');
    this.stage = 'done';
    return { greeting, approvedBy: this.approvedBy ?? '' };
  }

  @SignalHandler('approve')
  approve(by: string): void {
    this.approvedBy = by;
  }

  @QueryHandler('stage')
  currentStage(): ApprovalStage {
    return this.stage;
  }
}
