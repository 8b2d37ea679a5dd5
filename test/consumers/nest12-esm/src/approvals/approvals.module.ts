import { Module } from '@nestjs/common';
import { ApprovalWorkflow } from './approval.workflow.js';
import { ApprovalsController } from './approvals.controller.js';
import { GreetingService } from './greeting.service.js';
import { RenewalWorkflow } from './renewal.workflow.js';

@Module({
  controllers: [ApprovalsController],
  providers: [GreetingService, ApprovalWorkflow, RenewalWorkflow],
})
export class ApprovalsModule {}
