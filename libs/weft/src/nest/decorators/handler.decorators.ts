import { SetMetadata } from '@nestjs/common';
import { HANDLER_METADATA } from '../weft.constants.js';

/** Handles the signal `name` on the workflow's live instance (delivered durably, in order). */
export const SignalHandler = (name: string): MethodDecorator => SetMetadata(HANDLER_METADATA.signal, name);

/** Handles the update `name`: may change state and returns a value to the caller. */
export const UpdateHandler = (name: string): MethodDecorator => SetMetadata(HANDLER_METADATA.update, name);

/** Answers the query `name`: read-only, must not change state. */
export const QueryHandler = (name: string): MethodDecorator => SetMetadata(HANDLER_METADATA.query, name);
