import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { WeftHealthIndicator } from './weft-health.indicator';
import { WeftDatabaseCloser, weftDatabaseProvider, WEFT_DATABASE } from './weft-database.provider';
import { WeftConfigurableModule } from './weft.module-definition';

@Module({
  imports: [TerminusModule],
  providers: [weftDatabaseProvider, WeftDatabaseCloser, WeftHealthIndicator],
  exports: [WEFT_DATABASE, WeftHealthIndicator],
})
export class WeftModule extends WeftConfigurableModule {}
