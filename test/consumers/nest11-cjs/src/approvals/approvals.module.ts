import { Module } from '@nestjs/common';
import { ApprovalWorkflow } from './approval.workflow';
import { ApprovalsController } from './approvals.controller';
import { GreetingService } from './greeting.service';
import { RenewalWorkflow } from './renewal.workflow';

@Module({
  controllers: [ApprovalsController],
  providers: [GreetingService, ApprovalWorkflow, RenewalWorkflow],
})
export class ApprovalsModule {}
