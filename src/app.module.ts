import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { HealthController } from './health.controller';

@Module({
  imports: [
    TerminusModule,
    WeftModule.forRootAsync({
      useFactory: () => ({
        database: process.env.DATABASE_URL ? { url: process.env.DATABASE_URL } : undefined,
        schema: process.env.WEFT_SCHEMA ?? 'weft',
      }),
    }),
  ],
  controllers: [HealthController],
})
export class AppModule {}
