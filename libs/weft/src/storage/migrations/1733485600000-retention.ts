import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Retention deletes ended workflows by status and age, and their messages by cascade: the first
 * index finds them without scanning every ended row each pass, the second makes the cascade (and
 * a restart's history reset) an index lookup instead of a scan of weft_messages.
 */
export function retentionMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const msgs = qualify(schema, 'weft_messages');
  return {
    name: 'Retention1733485600000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`CREATE INDEX weft_workflows_ended_idx ON ${wf} (status, completed_at) WHERE completed_at IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_messages_workflow_idx ON ${msgs} (workflow_id)`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_messages_workflow_idx')}`);
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_ended_idx')}`);
    },
  };
}
