import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Queues (docs/queues.md): a workflow's `queue` and `priority`, when its queue admitted it, the
 * `enqueued` status, and `weft_queues`, one row per queue that every admitting transaction locks
 * (its sliding-window log of recent admissions is what makes a rate limit hold across engines).
 * The running count is never stored: it is counted from the workflow rows under that lock, so a
 * crash cannot leave it wrong. Both indexes are partial, so workflows outside a queue never enter them.
 */
export function queuesMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const queues = qualify(schema, 'weft_queues');
  return {
    name: 'Queues1733658400000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN queue varchar(255), ADD COLUMN priority integer NOT NULL DEFAULT 0,
        ADD COLUMN admitted_at timestamptz`);
      await qr.query(`ALTER TABLE ${wf} DROP CONSTRAINT weft_workflows_status_ck`);
      await qr.query(`ALTER TABLE ${wf} ADD CONSTRAINT weft_workflows_status_ck CHECK (status IN
        ('pending','enqueued','running','suspended','completed','failed','cancelled','timed_out'))`);
      await qr.query(`CREATE INDEX weft_workflows_enqueued_idx ON ${wf} (queue, priority, created_at, id) WHERE status = 'enqueued'`);
      await qr.query(`CREATE INDEX weft_workflows_queue_running_idx ON ${wf} (queue) WHERE status = 'running' AND queue IS NOT NULL`);
      await qr.query(`
        CREATE TABLE ${queues} (
          name varchar(255) PRIMARY KEY,
          recent_admissions timestamptz[] NOT NULL DEFAULT '{}',
          updated_at timestamptz NOT NULL DEFAULT now()
        )`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP TABLE ${queues}`);
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_queue_running_idx')}`);
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_enqueued_idx')}`);
      await qr.query(`ALTER TABLE ${wf} DROP CONSTRAINT weft_workflows_status_ck`);
      await qr.query(`ALTER TABLE ${wf} ADD CONSTRAINT weft_workflows_status_ck CHECK (status IN
        ('pending','running','suspended','completed','failed','cancelled','timed_out'))`);
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN queue, DROP COLUMN priority, DROP COLUMN admitted_at`);
    },
  };
}
