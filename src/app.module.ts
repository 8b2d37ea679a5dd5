import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { HealthController } from './health.controller.js';
import { OrdersModule } from './orders/orders.module.js';
import { ReportsModule } from './reports/reports.module.js';

@Module({
  imports: [
    TerminusModule,
    WeftModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({
        // No DATABASE_URL: an embedded PostgreSQL under ./.weft/pg.
        database: process.env.DATABASE_URL ? { url: process.env.DATABASE_URL } : undefined,
        schema: process.env.WEFT_SCHEMA ?? 'weft',
        // Several demo processes may share the embedded server: each workflow gets one fenced owner.
        ownership: (process.env.WEFT_OWNERSHIP as 'none' | 'lease' | 'workflow-lease' | undefined) ?? 'workflow-lease',
        workflowClaimTtl: process.env.WEFT_CLAIM_TTL ?? '6s',
        workflowClaimRenewInterval: process.env.WEFT_CLAIM_RENEW ?? '1s',
        engineId: process.env.WEFT_ENGINE_ID,
      }),
      http: true, // /weft/workflows
      metrics: true, // /metrics
    }),
    OrdersModule,
    ReportsModule,
  ],
  controllers: [HealthController],
})
export class AppModule {}
