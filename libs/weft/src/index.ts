export * from './errors.js';
export * from './options.js';
export type { WeftDatabaseOption, WeftUrlDatabase, OpenedDatabase } from './storage/data-source.js';
export { openDatabase } from './storage/data-source.js';
export { WeftModule } from './nest/weft.module.js';
export { WEFT_MODULE_OPTIONS, WEFT_ASYNC_OPTIONS_TYPE, WEFT_OPTIONS_TYPE } from './nest/weft.module-definition.js';
export type { WeftModuleOptions, WeftModuleExtras, WeftHttpOptions, WeftMetricsModuleOptions } from './nest/weft.module-definition.js';
export { WeftHealthIndicator } from './nest/weft-health.indicator.js';
export { WeftLifecycle } from './nest/weft-lifecycle.service.js';
export type { WeftBootstrapState } from './nest/weft-lifecycle.service.js';
export { WEFT_DATABASE } from './nest/weft.constants.js';
export * from './nest/decorators/index.js';
export * from './nest/nest-errors.js';
export { currentStep } from './nest/step-scope.js';
export { WeftExceptionFilter } from './nest/http/weft-exception.filter.js';
export { WeftMetrics, CLAIM_ATTEMPT_OUTCOMES } from './observability/metrics.js';
export type { WeftMetricsSink, WeftMetricsOptions, ClaimAttemptOutcome } from './observability/metrics.js';
export { WeftEngine } from './engine/engine.js';
export type { EngineHealthSnapshot } from './engine/engine.js';
export type { WeftEngineOptions } from './engine/options.js';
export { WorkflowContext } from './engine/context.js';
export { WorkflowHandle } from './engine/handle.js';
export { currentWorkflowContext } from './engine/als.js';
export type { Duration } from './engine/duration.js';
export type * from './engine/types.js';
export type { ChildHandle } from './engine/context.js';
export { WorkflowClaimRegistry } from './ownership/claim-registry.js';
export type { AcquireResult, ClaimOutcome, ClaimView } from './ownership/claim-registry.js';
export { ClaimRenewalScheduler } from './ownership/renewal-scheduler.js';
export type { PassReport } from './ownership/renewal-scheduler.js';
export type { ClaimDescription } from './ownership/ownership.js';
export type { OwnershipMode, OwnershipOptions } from './ownership/config.js';
export {
  WORKFLOW_CLAIM_TTL_SAFETY_MULTIPLIER,
  TAKEOVER_GRACE_MULTIPLIER,
  WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS,
} from './ownership/config.js';
export { WeftWorkflowClaimLostWarning, WeftWorkflowWakeDiscardedWarning, WeftEngineLeaseLostWarning } from './observability/warnings.js';
