import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TerminusModule } from '@nestjs/terminus';
import { WeftEngine } from '../engine/engine.js';
import { WeftMetrics } from '../observability/metrics.js';
import { WeftHealthIndicator } from './weft-health.indicator.js';
import { WeftLifecycle } from './weft-lifecycle.service.js';
import { WeftMetadataAccessor } from './weft-metadata.accessor.js';
import { WEFT_DATABASE } from './weft.constants.js';
import { WeftExplorer } from './weft.explorer.js';
import { WeftConfigurableModule } from './weft.module-definition.js';
import {
  claimRegistryProvider,
  operationRepositoryProvider,
  renewalSchedulerProvider,
  weftDatabaseProvider,
  weftEngineProvider,
  weftMetricsProvider,
  workflowRepositoryProvider,
} from './weft.providers.js';
import { WorkflowClaimRegistry } from '../ownership/claim-registry.js';
import { ClaimRenewalScheduler } from '../ownership/renewal-scheduler.js';
import { OperationRepository } from '../storage/repositories/operation.repository.js';
import { WorkflowRepository } from '../storage/repositories/workflow.repository.js';

/**
 * `WeftModule.forRoot(options)` / `forRootAsync({ imports, useFactory, inject, http, metrics })`.
 * Registers every `@Workflow` provider at module init, bootstraps the engine once the app is up,
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
    workflowRepositoryProvider,
    operationRepositoryProvider,
  ],
  exports: [
    WeftEngine,
    WeftMetrics,
    WeftHealthIndicator,
    WeftLifecycle,
    WEFT_DATABASE,
    WorkflowClaimRegistry,
    ClaimRenewalScheduler,
    WorkflowRepository,
    OperationRepository,
  ],
})
export class WeftModule extends WeftConfigurableModule {}
