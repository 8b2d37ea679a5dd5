import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `event`: the order in which operations RESOLVED in the live run (seq is the order they were
 * called). Replay releases recorded results in this order, so signal-handler deliveries and
 * concurrent waits interleave exactly as they did live.
 */
export function operationEventsMigration(schema: string): MigrationInterface {
  return {
    name: 'OperationEvents1733226400000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_operations')} ADD COLUMN event integer`);
      await qr.query(
        `CREATE INDEX weft_messages_pending_kind_idx ON ${qualify(schema, 'weft_messages')} (kind, workflow_id) WHERE consumed_seq IS NULL`,
      );
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX IF EXISTS ${qualify(schema, 'weft_messages_pending_kind_idx')}`);
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_operations')} DROP COLUMN event`);
    },
  };
}
