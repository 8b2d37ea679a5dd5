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
import { WorkflowDebounce } from './repositories/workflow-debounce.js';
import { SingletonWaits } from './repositories/workflow-start-singleton.js';
import { WorkflowRepository } from './repositories/workflow.repository.js';
import { Payloads } from './payloads.js';

export class WorkflowStore {
  readonly workflows: WorkflowRepository;
  readonly operations: OperationRepository;
  readonly messages: MessageRepository;
  readonly timers: TimerRepository;
  readonly schedules: ScheduleRepository;
  readonly queues: QueueRepository;
  readonly events: EventRepository;
  readonly streams: StreamRepository;
  /** Debounced starts (docs/queues.md). */
  readonly debounce: WorkflowDebounce;
  /** Singleton starts queued behind their key's holder (onConflict 'queue'). */
  readonly singletonWaits: SingletonWaits;
  readonly stepProgress: StepProgressRepository;

  constructor(
    readonly sql: SqlClient,
    readonly schema: string,
    /** The workflow clock's offset (common/clock.ts): workflow times are written and judged on it. */
    readonly clockOffset: ClockOffset = () => 0,
    /** The codec applied to every payload column (payloads.ts); none by default. */
    readonly payloads: Payloads = new Payloads(),
  ) {
    this.messages = new MessageRepository(sql, schema, payloads);
    this.workflows = new WorkflowRepository(sql, schema, this.messages, clockOffset, payloads);
    this.operations = new OperationRepository(sql, schema, payloads);
    this.timers = new TimerRepository(sql, schema, clockOffset);
    this.debounce = new WorkflowDebounce(sql, schema, clockOffset, payloads);
    this.singletonWaits = new SingletonWaits(sql, schema, clockOffset, payloads);
    this.schedules = new ScheduleRepository(sql, schema, clockOffset, payloads);
    this.queues = new QueueRepository(sql, schema);
    this.events = new EventRepository(sql, schema, payloads);
    this.streams = new StreamRepository(sql, schema, payloads);
    this.stepProgress = new StepProgressRepository(sql, schema, payloads);
  }
}
