import { applyDecorators, SetMetadata } from '@nestjs/common';
import type { UpdateValidatorFn } from '../../common/types.js';
import { HANDLER_METADATA, WEFT_UPDATE_VALIDATE_OPTION_METADATA, WEFT_UPDATE_VALIDATOR_METADATA } from '../weft.constants.js';

/** Handles the signal `name` on the workflow's live instance (delivered durably, in order). */
export const SignalHandler = (name: string): MethodDecorator => SetMetadata(HANDLER_METADATA.signal, name);

export interface UpdateHandlerOptions {
  /**
   * Runs before anything is recorded, with the instance as `this` and the update's arguments; it
   * throws to reject the update (the caller gets UpdateRejectedError). Synchronous, no ctx calls.
   */
  validate?: UpdateValidatorFn;
}

/**
 * Handles the update `name`: may change state and returns a value to the caller. It may be async
 * and await ctx operations (steps, sleeps, conditions, children), as in Temporal (docs/messages.md).
 */
export const UpdateHandler = (name: string, options: UpdateHandlerOptions = {}): MethodDecorator =>
  options.validate === undefined
    ? SetMetadata(HANDLER_METADATA.update, name)
    : applyDecorators(SetMetadata(HANDLER_METADATA.update, name), SetMetadata(WEFT_UPDATE_VALIDATE_OPTION_METADATA, options.validate));

/** Validates the update `name` before anything is recorded: throw to reject it (synchronous, no ctx calls). */
export const UpdateValidator = (name: string): MethodDecorator => SetMetadata(WEFT_UPDATE_VALIDATOR_METADATA, name);

/** Answers the query `name`: read-only, must not change state. */
export const QueryHandler = (name: string): MethodDecorator => SetMetadata(HANDLER_METADATA.query, name);
