import type { ScheduleDecoratorOptions } from '../../common/types.js';
import { WEFT_SCHEDULE_METADATA } from '../weft.constants.js';

/**
 * Runs the `@Workflow` class on a schedule: `@Schedule({ id: 'nightly-report', cron: '0 3 * * *',
 * timezone: 'Europe/Berlin' })` or `@Schedule({ id: 'heartbeat', every: '30s' })`. Created or
 * updated at bootstrap (many replicas booting together write one row), fired by whichever
 * engine's maintenance gets there first, once per fire time. May be stacked.
 */
export function Schedule(options: ScheduleDecoratorOptions): ClassDecorator {
  return (target) => {
    const list = (Reflect.getMetadata(WEFT_SCHEDULE_METADATA, target) as ScheduleDecoratorOptions[] | undefined) ?? [];
    Reflect.defineMetadata(WEFT_SCHEDULE_METADATA, [...list, options], target);
  };
}
