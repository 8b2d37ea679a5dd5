import { Injectable } from '@nestjs/common';
import type { WorkflowMetadata } from './decorators/workflow.decorator.js';
import type { ScheduleDecoratorOptions } from '../common/types.js';
import {
  HANDLER_METADATA,
  HandlerKind,
  WEFT_SCHEDULE_METADATA,
  WEFT_UPDATE_VALIDATE_OPTION_METADATA,
  WEFT_UPDATE_VALIDATOR_METADATA,
  WEFT_WORKFLOW_METADATA,
} from './weft.constants.js';

/** Reads what the decorators wrote. */
@Injectable()
export class WeftMetadataAccessor {
  getWorkflowMetadata(target: object): WorkflowMetadata | undefined {
    return Reflect.getMetadata(WEFT_WORKFLOW_METADATA, target) as WorkflowMetadata | undefined;
  }

  /** The `@Schedule`s on a workflow class, in declaration order. */
  getSchedules(target: object): ScheduleDecoratorOptions[] {
    return [...((Reflect.getMetadata(WEFT_SCHEDULE_METADATA, target) as ScheduleDecoratorOptions[] | undefined) ?? [])].reverse();
  }

  /** The handler name a method declares for `kind`, if any. */
  getHandlerName(kind: HandlerKind, method: unknown): unknown {
    if (typeof method !== 'function') return undefined;
    return Reflect.getMetadata(HANDLER_METADATA[kind], method) as unknown;
  }

  /** The update a method validates (`@UpdateValidator(name)`), if any. */
  getValidatorOf(method: unknown): unknown {
    if (typeof method !== 'function') return undefined;
    return Reflect.getMetadata(WEFT_UPDATE_VALIDATOR_METADATA, method) as unknown;
  }

  /** A handler method's `validate` option, if any. */
  getValidateOption(method: unknown): unknown {
    if (typeof method !== 'function') return undefined;
    return Reflect.getMetadata(WEFT_UPDATE_VALIDATE_OPTION_METADATA, method) as unknown;
  }
}
