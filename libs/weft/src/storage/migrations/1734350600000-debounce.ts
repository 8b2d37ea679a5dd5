import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Debounced starts (docs/queues.md, docs/decisions/0034): a pending workflow's `debounce_key`,
 * unique per type among pending workflows (the upsert that pushes a start later finds its row by
 * it), and `debounce_until`, the latest its start may be pushed to (`maxDelay` after the first call).
 * Singleton starts that queue: `singleton_wait`, the key a pending workflow waits to hold.
 */
export function debounceMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'DebounceSingletonQueue1734350600000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN debounce_key varchar(255), ADD COLUMN debounce_until timestamptz,
        ADD COLUMN singleton_wait varchar(255)`);
      await qr.query(`CREATE INDEX weft_workflows_singleton_wait_idx ON ${wf} (type, singleton_wait, created_at, id)
        WHERE singleton_wait IS NOT NULL AND status = 'pending'`);
      await qr.query(`CREATE UNIQUE INDEX weft_workflows_debounce_idx ON ${wf} (type, debounce_key)
        WHERE debounce_key IS NOT NULL AND status = 'pending'`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_debounce_idx')}`);
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_singleton_wait_idx')}`);
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN singleton_wait, DROP COLUMN debounce_until, DROP COLUMN debounce_key`);
    },
  };
}
