import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { Duration, WeftModule } from '@weft/nest';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeyModule } from './api-key.module.js';
import { HealthController } from './health.controller.js';
import { OrdersModule } from './orders/orders.module.js';
import { ReportsModule } from './reports/reports.module.js';

@Module({
  imports: [
    TerminusModule,
    ApiKeyModule,
    WeftModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({
        // No DATABASE_URL: an embedded PostgreSQL under ./.weft/pg.
        database: process.env.DATABASE_URL ? { url: process.env.DATABASE_URL } : undefined,
        schema: process.env.WEFT_SCHEMA ?? 'weft',
        // Several demo processes may share the embedded server: each workflow gets one fenced owner.
        ownership: (process.env.WEFT_OWNERSHIP as 'none' | 'lease' | 'workflow-lease' | undefined) ?? 'workflow-lease',
        // Environment strings: the engine checks them at start-up (InvalidDurationError).
        workflowClaimTtl: (process.env.WEFT_CLAIM_TTL ?? '6s') as Duration,
        workflowClaimRenewInterval: (process.env.WEFT_CLAIM_RENEW ?? '1s') as Duration,
        engineId: process.env.WEFT_ENGINE_ID,
        // Orders charge a payment provider that allows 20 requests a second: the queue holds that
        // across every demo process. An order keeps its slot while it waits for approval or
        // packing, so the concurrency is generous (docs/queues.md).
        queues: { payments: { concurrency: 50, rateLimit: { limit: 20, period: '1s' } } },
      }),
      // /weft/workflows, the dashboard at /weft and /metrics, behind the x-api-key header or the
      // weft_session cookie of /weft/sign-in (WEFT_API_KEY; logged when generated; docs/operations.md#dashboard).
      http: { guards: [ApiKeyGuard] },
      metrics: true,
      dashboard: true,
    }),
    OrdersModule,
    ReportsModule,
  ],
  controllers: [HealthController],
})
export class AppModule {}
