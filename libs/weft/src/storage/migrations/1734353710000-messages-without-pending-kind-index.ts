import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * weft_messages_pending_kind_idx goes: no statement looks unconsumed messages up by kind, and after
 * an ANALYZE that saw no unconsumed message, the generic plan of a batched advance's consumption
 * read it whole (every unconsumed message of every workflow) instead of seeking the batch's
 * workflows in weft_messages_unconsumed_idx (docs/decisions/0056).
 */
export function messagesWithoutPendingKindIndexMigration(schema: string): MigrationInterface {
  const idx = qualify(schema, 'weft_messages_pending_kind_idx');
  return {
    name: 'MessagesWithoutPendingKindIndex1734353710000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${idx}`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(
        `CREATE INDEX weft_messages_pending_kind_idx ON ${qualify(schema, 'weft_messages')} (kind, workflow_id) WHERE consumed_seq IS NULL`,
      );
    },
  };
}
