import { Module } from '@nestjs/common';
import { CarrierPollerStarter } from './carrier-poller.starter.js';
import { CarrierPollerWorkflow } from './carrier-poller.workflow.js';
import { HeartbeatWorkflow } from './heartbeat.workflow.js';
import { NightlyReportWorkflow } from './nightly-report.workflow.js';
import { ReportsService } from './reports.service.js';

@Module({ providers: [ReportsService, NightlyReportWorkflow, HeartbeatWorkflow, CarrierPollerWorkflow, CarrierPollerStarter] })
export class ReportsModule {}
