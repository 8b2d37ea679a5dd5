import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { WeftEngine } from '../engine/engine';
import { WeftMetrics } from '../observability/metrics';
import { WeftHealthIndicator } from './weft-health.indicator';
import { WeftLifecycle } from './weft-lifecycle.service';
import { WeftMetadataAccessor } from './weft-metadata.accessor';
import { WEFT_DATABASE } from './weft.constants';
import { WeftExplorer } from './weft.explorer';
import { WeftConfigurableModule } from './weft.module-definition';
import {
  claimRegistryProvider,
  renewalSchedulerProvider,
  weftDatabaseProvider,
  weftEngineProvider,
  weftMetricsProvider,
} from './weft.providers';
import { WorkflowClaimRegistry } from '../ownership/claim-registry';
import { ClaimRenewalScheduler } from '../ownership/renewal-scheduler';

/**
 * `WeftModule.forRoot(options)` / `forRootAsync({ imports, useFactory, inject, http, metrics })`.
 * Registers every @Workflow provider at module init, bootstraps the engine once the app is up,
 * disposes it before the app's own shutdown hooks close other connections.
 */
@Module({
  imports: [DiscoveryModule, TerminusModule],
  providers: [
    WeftMetadataAccessor,
    weftMetricsProvider,
    weftEngineProvider,
    weftDatabaseProvider,
    WeftExplorer,
    WeftLifecycle,
    WeftHealthIndicator,
    claimRegistryProvider,
    renewalSchedulerProvider,
  ],
  exports: [WeftEngine, WeftMetrics, WeftHealthIndicator, WeftLifecycle, WEFT_DATABASE, WorkflowClaimRegistry, ClaimRenewalScheduler],
})
export class WeftModule extends WeftConfigurableModule {}
