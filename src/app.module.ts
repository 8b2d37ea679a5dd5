import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { HealthController } from './health.controller';
import { OrdersModule } from './orders/orders.module';

@Module({
  imports: [
    TerminusModule,
    WeftModule.forRootAsync({
      isGlobal: true,
      useFactory: () => ({
        // No DATABASE_URL: an embedded PostgreSQL under ./.weft/pg.
        database: process.env.DATABASE_URL ? { url: process.env.DATABASE_URL } : undefined,
        schema: process.env.WEFT_SCHEMA ?? 'weft',
      }),
      http: true, // /weft/workflows
      metrics: true, // /metrics
    }),
    OrdersModule,
  ],
  controllers: [HealthController],
})
export class AppModule {}
