// The public surface of @weft/nest: nothing else is imported by users. Internals (the database
// opener, tuning constants, internal-only errors, the storage and runtime classes) stay out;
// test/public-surface.e2e-spec.ts checks that public declarations only mention exported types.

// Errors users can see, each with a stable `code` and a category (`ErrorCategory`) on its class.
export {
  WeftError,
  ErrorCategory,
  InvalidConfigurationError,
  DatabaseUnavailableError,
  EmbeddedDatabaseError,
  EmbeddedPostgresNotInstalledError,
  WorkflowNotFoundError,
  WorkflowTypeNotRegisteredError,
  WorkflowAlreadyStartedError,
  SingletonConflictError,
  WorkflowNotRunningError,
  WorkflowCancelledError,
  InvalidWorkflowIdError,
  InvalidDurationError,
  InvalidArgumentError,
  PayloadNotSerializableError,
  PayloadTooLargeError,
  NonDeterminismError,
  OutsideWorkflowError,
  OperationInTransactionError,
  TransactionDatabaseMismatchError,
  ResultTimeoutError,
  WorkflowFailedError,
  StepTimeoutError,
  StepFailedError,
  StepMaxElapsedError,
  StepHeartbeatTimeoutError,
  StepAlreadyCompletedError,
  ApplicationError,
  NonRetryableError,
  EngineDisposedError,
  WorkflowClaimUnavailableError,
  OwnershipModeMismatchError,
  EngineLeaseNotHeldError,
  OwnershipUnsupportedError,
  UpdateTimeoutError,
  ChildWorkflowFailedError,
  UnknownHandlerError,
  UpdateFailedError,
  UpdateRejectedError,
  QueryFailedError,
  EngineNotReadyError,
  RepositoryReadOnlyError,
  MigrationFailedError,
  ScheduleNotFoundError,
  ScheduleAlreadyExistsError,
  WorkflowPurgeRefusedError,
  QueueNotDeclaredError,
  ForkRefusedError,
  TestClockStuckError,
  CodecMissingError,
  PayloadCodecError,
  InterceptorFailedError,
} from './common/errors.js';
export type { RecordedError, WeftErrorClass, ApplicationErrorOptions } from './common/errors.js';
export type { WeftSchedules, SchedulePatch } from './engine/schedules/schedules.js';
export * from './nest/nest-errors.js';

// The Nest module, its options and decorators.
export { WeftModule } from './nest/weft.module.js';
export { WeftConfigurableModule, WEFT_MODULE_OPTIONS } from './nest/weft.module-definition.js';
export type {
  WeftModuleOptions,
  WeftModuleExtras,
  WeftHttpOptions,
  WeftMetricsModuleOptions,
  WeftDashboardOptions,
  WeftCodecRef,
  WeftInterceptorRef,
} from './nest/weft-module.options.js';
export { WeftClsInterceptor, CLS_ID_HEADER } from './nest/cls-interceptor.js';
export type { WeftOptions } from './common/options.js';
export type { WeftDatabaseOption, WeftUrlDatabase } from './common/options.js';
export * from './nest/decorators/index.js';
export { currentStep } from './nest/step-scope.js';
export { WEFT_DATABASE } from './nest/weft.constants.js';
export { WeftHealthIndicator } from './nest/weft-health.indicator.js';
export { WeftLifecycle } from './nest/weft-lifecycle.service.js';
export type { WeftBootstrapState } from './nest/weft-lifecycle.service.js';
export { WeftExceptionFilter } from './nest/http/weft-exception.filter.js';

// The engine, for Nest apps (injected) and plain Node programs (WeftEngine.create).
export { WeftEngine } from './engine/engine.js';
export type { EngineHealthSnapshot, ForkOptions, PartitionFigures, QueuePartitionsView, QueueView } from './engine/engine.js';
export type { WeftEngineOptions } from './engine/options.js';
export { WorkflowHandle } from './engine/handle.js';
export { WorkflowReplayer } from './engine/replayer.js';
export type { RecordedWorkflow, ReplayReport } from './engine/replayer.js';
export { currentWorkflowContext } from './engine/als.js';
export type { WorkflowClass } from './engine/registry.js';
export type { Duration, DurationUnit } from './common/duration.js';
export type { WorkflowClock, ClockTimer } from './common/clock.js';
export type { CodecOption, PayloadCodec } from './common/codec.js';
export { AesGcmCodec } from './common/aes-gcm-codec.js';
export type { WeftInterceptor, WeftHeaders, StartInput, RunInput, StepInput, SignalInput } from './common/interceptors.js';
export type { OpenedDatabase as WeftDatabase } from './storage/data-source.js';
export { startEmbeddedPostgres } from './storage/embedded/start.js';
export type { EmbeddedPostgresHandle, EmbeddedPostgresOptions } from './storage/embedded/start.js';
export type * from './common/types.js';
export { OPERATION_KINDS } from './common/operation-kinds.js';
export type { OperationKind, OperationKindSpec, Recording, Replaying, WaitKind } from './common/operation-kinds.js';

// Reading Weft's tables: the engine's repositories (injectable) and the TypeORM entities, for
// queries of your own through the DataSource (inject WEFT_DATABASE for it).
export { WeftRepository } from './storage/repositories/weft-repository.js';
export { WorkflowRepository } from './storage/repositories/workflow.repository.js';
export { OperationRepository } from './storage/repositories/operation.repository.js';
export type { AttributeQuery, WorkflowRow } from './storage/types.js';
export type { ListQuery } from './storage/repositories/workflow-list.js';
export type { MessageKind, TimerKind } from './storage/entities/index.js';
export {
  WorkflowEntity,
  OperationEntity,
  MessageEntity,
  TimerEntity,
  WorkflowClaimEntity,
  GlobalLeaseEntity,
  OwnershipMarkerEntity,
  ScheduleEntity,
  EventEntity,
  StreamEntity,
  StreamEntryEntity,
  QueueEntity,
  StepProgressEntity,
  WEFT_ENTITIES,
} from './storage/entities/index.js';

// Ownership: the injectable claim registry and renewal scheduler, and their read-only views.
export { WorkflowClaimRegistry } from './ownership/claim-registry.js';
export type { AcquireResult, ClaimOutcome } from './ownership/claim-registry.js';
export type { ClaimView } from './storage/repositories/claim.repository.js';
export { ClaimRenewalScheduler } from './ownership/renewal-scheduler.js';
export type { PassReport } from './ownership/renewal-scheduler.js';
export type { ClaimDescription } from './ownership/policy.js';
export type { OwnershipConfig, OwnershipMode, OwnershipOptions } from './ownership/config.js';

// Observability.
export { WeftMetrics, CLAIM_ATTEMPT_OUTCOMES } from './observability/metrics.js';
export type { WeftMetricsSink, WeftMetricsOptions, ClaimAttemptOutcome } from './observability/metrics.js';
export { WeftWorkflowClaimLostWarning, WeftWorkflowWakeDiscardedWarning, WeftEngineLeaseLostWarning } from './observability/warnings.js';
