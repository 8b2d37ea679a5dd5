import { EventEntity } from './event.entity.js';
import { MessageEntity } from './message.entity.js';
import { OperationEntity } from './operation.entity.js';
import { GlobalLeaseEntity, OwnershipMarkerEntity, WorkflowClaimEntity } from './ownership.entities.js';
import { QueueEntity } from './queue.entity.js';
import { StreamEntity, StreamEntryEntity } from './stream.entity.js';
import { StepProgressEntity } from './step-progress.entity.js';
import { ScheduleEntity } from './schedule.entity.js';
import { TimerEntity } from './timer.entity.js';
import { WorkflowEntity } from './workflow.entity.js';

export * from './event.entity.js';
export * from './message.entity.js';
export * from './operation.entity.js';
export * from './ownership.entities.js';
export * from './queue.entity.js';
export * from './schedule.entity.js';
export * from './stream.entity.js';
export * from './step-progress.entity.js';
export * from './timer.entity.js';
export * from './workflow.entity.js';

export const WEFT_ENTITIES = [
  WorkflowEntity,
  OperationEntity,
  MessageEntity,
  TimerEntity,
  WorkflowClaimEntity,
  GlobalLeaseEntity,
  OwnershipMarkerEntity,
  ScheduleEntity,
  QueueEntity,
  EventEntity,
  StreamEntity,
  StreamEntryEntity,
  StepProgressEntity,
];
