import { MessageEntity } from './message.entity';
import { OperationEntity } from './operation.entity';
import { GlobalLeaseEntity, OwnershipMarkerEntity, WorkflowClaimEntity } from './ownership.entities';
import { TimerEntity } from './timer.entity';
import { WorkflowEntity } from './workflow.entity';

export * from './message.entity';
export * from './operation.entity';
export * from './ownership.entities';
export * from './timer.entity';
export * from './workflow.entity';

export const WEFT_ENTITIES = [
  WorkflowEntity,
  OperationEntity,
  MessageEntity,
  TimerEntity,
  WorkflowClaimEntity,
  GlobalLeaseEntity,
  OwnershipMarkerEntity,
];
