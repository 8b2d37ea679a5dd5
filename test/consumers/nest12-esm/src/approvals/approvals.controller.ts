import {
  BadRequestException,
  Body,
  Controller,
  Get,
  Param,
  Post,
} from '@nestjs/common';
import { WeftEngine } from '@weft/nest';
import {
  APPROVAL_WORKFLOW,
  ApprovalResult,
  ApprovalStage,
} from './approval.workflow.js';

const NAME = /^[\p{L}\p{N} .'-]{1,100}$/u;

function checkedName(field: string, value: unknown): string {
  if (typeof value !== 'string' || !NAME.test(value))
    throw new BadRequestException(`${field}: 1 to 100 letters, digits, spaces`);
  return value;
}

interface ApprovalView {
  status: string;
  stage: ApprovalStage | null;
  output: ApprovalResult | null;
}

@Controller('approvals')
export class ApprovalsController {
  constructor(private readonly engine: WeftEngine) {}

  @Post()
  async start(
    @Body() body: { name?: unknown },
  ): Promise<{ workflowId: string }> {
    const handle = await this.engine.start(APPROVAL_WORKFLOW, {
      name: checkedName('name', body?.name),
    });
    return { workflowId: handle.workflowId };
  }

  @Post(':id/approve')
  async approve(
    @Param('id') id: string,
    @Body() body: { by?: unknown },
  ): Promise<{ accepted: true }> {
    await this.engine.signal(id, 'approve', checkedName('by', body?.by));
    return { accepted: true };
  }

  @Get(':id')
  async show(@Param('id') id: string): Promise<ApprovalView> {
    const { status, output } = await this.engine.describe(id);
    const stage =
      status === 'running'
        ? await this.engine.query<ApprovalStage>(id, 'stage')
        : null;
    return { status, stage, output: (output as ApprovalResult) ?? null };
  }
}
