import { Module } from '@nestjs/common';
import { HeartbeatWorkflow } from './heartbeat.workflow.js';
import { NightlyReportWorkflow } from './nightly-report.workflow.js';
import { ReportsService } from './reports.service.js';

@Module({ providers: [ReportsService, NightlyReportWorkflow, HeartbeatWorkflow] })
export class ReportsModule {}
