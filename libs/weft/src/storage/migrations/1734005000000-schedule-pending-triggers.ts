import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `pending_triggers`: fire times of `schedules.trigger()` calls made on an engine that does not
 * run the schedule's type (an API-only service, the weft CLI). The fire pass of an engine that
 * runs the type starts them through its own start path, so they go through the type's queue.
 */
export function schedulePendingTriggersMigration(schema: string): MigrationInterface {
  const t = qualify(schema, 'weft_schedules');
  return {
    name: 'SchedulePendingTriggers1734005000000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${t} ADD COLUMN pending_triggers json NOT NULL DEFAULT '[]'`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${t} DROP COLUMN pending_triggers`);
    },
  };
}
