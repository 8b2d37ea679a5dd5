// Schedules by id: missing, or there already.
import { ErrorCategory, WeftError } from './base.js';

export class ScheduleNotFoundError extends WeftError {
  static readonly code = 'WEFT_SCHEDULE_NOT_FOUND';
  static readonly category = ErrorCategory.NotFound;
  constructor(readonly scheduleId: string) {
    super(`No schedule "${scheduleId}". List them with engine.schedules.list() (or GET <prefix>/schedules).`);
  }
}

export class ScheduleAlreadyExistsError extends WeftError {
  static readonly code = 'WEFT_SCHEDULE_ALREADY_EXISTS';
  static readonly category = ErrorCategory.Conflict;
  constructor(readonly scheduleId: string) {
    super(`Schedule "${scheduleId}" already exists. Change it with engine.schedules.update(id, patch), or delete it first.`);
  }
}
