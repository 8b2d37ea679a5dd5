import { MigrationInterface } from 'typeorm';
import { initialSchemaMigration } from './1733140000000-initial-schema.js';
import { operationEventsMigration } from './1733226400000-operation-events.js';
import { claimsHotRenewalMigration } from './1733312800000-claims-hot-renewal.js';
import { schedulesMigration } from './1733399200000-schedules.js';
import { retentionMigration } from './1733485600000-retention.js';
import { traceContextMigration } from './1733572000000-trace-context.js';
import { queuesMigration } from './1733658400000-queues.js';
import { workflowVersionMigration } from './1733744800000-workflow-version.js';
import { fenceEpochMigration } from './1733831200000-fence-epoch.js';
import { claimsWithoutEngineIndexMigration } from './1733918000000-claims-without-engine-index.js';
import { schedulePendingTriggersMigration } from './1734005000000-schedule-pending-triggers.js';
import { workflowAttributesMigration } from './1734091400000-workflow-attributes.js';
import { eventsMigration } from './1734177800000-events.js';
import { attributesIndexMigration } from './1734177840000-attributes-index.js';
import { repairOriginsMigration } from './1734177850000-repair-origins.js';
import { queuePartitionsMigration } from './1734178039000-queue-partitions.js';
import { streamsMigration } from './1734264200000-streams.js';
import { debounceMigration } from './1734350600000-debounce.js';
import { stepProgressMigration } from './1734350700000-step-progress.js';
import { workflowHeadersMigration } from './1734351100000-workflow-headers.js';
import { queueSlotReleaseMigration } from './1734351200000-queue-slot-release.js';
import { queueAdmitByIdMigration } from './1734351300000-queue-admit-by-id.js';
import { queueAdmitTimersMigration } from './1734351700000-queue-admit-timers.js';
import { queueAdmitSeeksMigration } from './1734352100000-queue-admit-seeks.js';
import { queueAdmitLaunchMigration } from './1734352500000-queue-admit-launch.js';
import { queueAdmitKeyLimitsMigration } from './1734352700000-queue-admit-key-limits.js';
import { statusIndexWithoutEnqueuedMigration } from './1734352900000-status-index-without-enqueued.js';
import { runningIndexesLeadWithStatusMigration } from './1734353700000-running-indexes-lead-with-status.js';
import { messagesWithoutPendingKindIndexMigration } from './1734353710000-messages-without-pending-kind-index.js';
import { singletonWaitIndexNamesEnqueuedMigration } from './1734354300000-singleton-wait-index-names-enqueued.js';

/** Ordered; ids are never reused. */
export function weftMigrations(schema: string): Array<{ id: number; migration: MigrationInterface }> {
  return [
    { id: 1733140000000, migration: initialSchemaMigration(schema) },
    { id: 1733226400000, migration: operationEventsMigration(schema) },
    { id: 1733312800000, migration: claimsHotRenewalMigration(schema) },
    { id: 1733399200000, migration: schedulesMigration(schema) },
    { id: 1733485600000, migration: retentionMigration(schema) },
    { id: 1733572000000, migration: traceContextMigration(schema) },
    { id: 1733658400000, migration: queuesMigration(schema) },
    { id: 1733744800000, migration: workflowVersionMigration(schema) },
    { id: 1733831200000, migration: fenceEpochMigration(schema) },
    { id: 1733918000000, migration: claimsWithoutEngineIndexMigration(schema) },
    { id: 1734005000000, migration: schedulePendingTriggersMigration(schema) },
    { id: 1734091400000, migration: workflowAttributesMigration(schema) },
    { id: 1734177800000, migration: eventsMigration(schema) },
    { id: 1734177840000, migration: attributesIndexMigration(schema) },
    { id: 1734177850000, migration: repairOriginsMigration(schema) },
    { id: 1734178039000, migration: queuePartitionsMigration(schema) },
    { id: 1734264200000, migration: streamsMigration(schema) },
    { id: 1734350600000, migration: debounceMigration(schema) },
    { id: 1734350700000, migration: stepProgressMigration(schema) },
    { id: 1734351100000, migration: workflowHeadersMigration(schema) },
    { id: 1734351200000, migration: queueSlotReleaseMigration(schema) },
    { id: 1734351300000, migration: queueAdmitByIdMigration(schema) },
    { id: 1734351700000, migration: queueAdmitTimersMigration(schema) },
    { id: 1734352100000, migration: queueAdmitSeeksMigration(schema) },
    { id: 1734352500000, migration: queueAdmitLaunchMigration(schema) },
    { id: 1734352700000, migration: queueAdmitKeyLimitsMigration(schema) },
    { id: 1734352900000, migration: statusIndexWithoutEnqueuedMigration(schema) },
    { id: 1734353700000, migration: runningIndexesLeadWithStatusMigration(schema) },
    { id: 1734353710000, migration: messagesWithoutPendingKindIndexMigration(schema) },
    { id: 1734354300000, migration: singletonWaitIndexNamesEnqueuedMigration(schema) },
  ];
}
