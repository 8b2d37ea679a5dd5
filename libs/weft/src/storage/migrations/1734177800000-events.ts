import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `weft_events`: ctx.setEvent's latest value per (workflow, key), upserted by the advance statement
 * that carries the call (docs/events-and-streams.md). Removed with its workflow by the foreign key,
 * so purge and retention need no statement of their own.
 */
export function eventsMigration(schema: string): MigrationInterface {
  const events = qualify(schema, 'weft_events');
  return {
    name: 'Events1734177800000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`
        CREATE TABLE ${events} (
          workflow_id varchar(255) NOT NULL REFERENCES ${qualify(schema, 'weft_workflows')} (id) ON DELETE CASCADE,
          key varchar(255) NOT NULL,
          value json,
          seq integer NOT NULL,
          updated_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (workflow_id, key)
        )`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP TABLE ${events}`);
    },
  };
}
