import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { ApiKeyGuard } from './api-key.guard.js';
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
      // /weft/workflows and /metrics, behind the x-api-key header (WEFT_API_KEY; logged when generated).
      http: { guards: [ApiKeyGuard] },
      metrics: true,
    }),
    OrdersModule,
    ReportsModule,
  ],
  controllers: [HealthController],
})
export class AppModule {}
