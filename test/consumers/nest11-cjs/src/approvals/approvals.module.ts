import { Module } from '@nestjs/common';
import { ApprovalWorkflow } from './approval.workflow';
import { ApprovalsController } from './approvals.controller';
import { GreetingService } from './greeting.service';

@Module({
  controllers: [ApprovalsController],
  providers: [GreetingService, ApprovalWorkflow],
})
export class ApprovalsModule {}
