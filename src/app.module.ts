import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { DataSource } from 'typeorm';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeyModule } from './api-key.module.js';
import { DemoConfig, demoConfig } from './config/demo.config.js';
import { DemoDatabaseModule } from './database/database.module.js';
import { HealthController } from './health.controller.js';
import { OrdersModule } from './orders/orders.module.js';
import { ReportsModule } from './reports/reports.module.js';

@Module({
  imports: [
    // The environment only (no .env file): src/config/ declares and checks every variable.
    ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [demoConfig] }),
    TerminusModule,
    ApiKeyModule,
    // The app's own DataSource (DATABASE_URL, else an embedded PostgreSQL under ./.weft/pg).
    DemoDatabaseModule,
    WeftModule.forRootAsync({
      isGlobal: true,
      imports: [DemoDatabaseModule],
      inject: [demoConfig.KEY, DataSource],
      useFactory: ({ weft }: DemoConfig, dataSource: DataSource) => ({
        // Weft runs on the app's DataSource: transactional steps commit the demo's orders with
        // their records, and a controller's start joins the request's transaction.
        database: dataSource,
        schema: weft.schema,
        ownership: weft.ownership,
        workflowClaimTtl: weft.workflowClaimTtl,
        workflowClaimRenewInterval: weft.workflowClaimRenewInterval,
        engineId: weft.engineId,
        // Orders charge a payment provider that allows 20 requests a second: the queue holds that
        // across every demo process. An order keeps its slot while it waits for approval or
        // packing, so the concurrency is generous (docs/queues.md).
        // `exports` is shared by tenants: each key (a tenant id) runs one export at a time, so one
        // tenant's backlog cannot hold the others back; the dashboard's page of the queue lists
        // the busiest tenants (docs/queues.md, "Partitioned queues").
        queues: {
          payments: { concurrency: 50, rateLimit: { limit: 20, period: '1s' } },
          exports: { concurrency: 10, partition: { concurrency: 1 } },
        },
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
