// The storage the engine works with: one repository per table (storage/repositories/), each the
// only code that reads or writes its table. The claim, lease and marker repositories are used by
// ownership/ directly (see docs/architecture.md).
import type { ClockOffset } from '../common/clock.js';
import type { SqlClient } from './sql-client.js';
import { EventRepository } from './repositories/event.repository.js';
import { StreamRepository } from './repositories/stream.repository.js';
import { StepProgressRepository } from './repositories/step-progress.repository.js';
import { MessageRepository } from './repositories/message.repository.js';
import { OperationRepository } from './repositories/operation.repository.js';
import { QueueRepository } from './repositories/queue.repository.js';
import { ScheduleRepository } from './repositories/schedule.repository.js';
import { TimerRepository } from './repositories/timer.repository.js';
import { WorkflowRepository } from './repositories/workflow.repository.js';

export class WorkflowStore {
  readonly workflows: WorkflowRepository;
  readonly operations: OperationRepository;
  readonly messages: MessageRepository;
  readonly timers: TimerRepository;
  readonly schedules: ScheduleRepository;
  readonly queues: QueueRepository;
  readonly events: EventRepository;
  readonly streams: StreamRepository;
  readonly stepProgress: StepProgressRepository;

  constructor(
    readonly sql: SqlClient,
    readonly schema: string,
    /** The workflow clock's offset (common/clock.ts): workflow times are written and judged on it. */
    readonly clockOffset: ClockOffset = () => 0,
  ) {
    this.messages = new MessageRepository(sql, schema);
    this.workflows = new WorkflowRepository(sql, schema, this.messages, clockOffset);
    this.operations = new OperationRepository(sql, schema);
    this.timers = new TimerRepository(sql, schema, clockOffset);
    this.schedules = new ScheduleRepository(sql, schema, clockOffset);
    this.queues = new QueueRepository(sql, schema);
    this.events = new EventRepository(sql, schema);
    this.streams = new StreamRepository(sql, schema);
    this.stepProgress = new StepProgressRepository(sql, schema);
  }
}
