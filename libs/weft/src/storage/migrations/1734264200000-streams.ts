import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `weft_streams` (a stream's next offset and close) and `weft_stream_entries` (ctx.writeStream),
 * removed with their workflow by the foreign key (docs/events-and-streams.md).
 */
export function streamsMigration(schema: string): MigrationInterface {
  const streams = qualify(schema, 'weft_streams');
  const entries = qualify(schema, 'weft_stream_entries');
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'Streams1734264200000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`
        CREATE TABLE ${streams} (
          workflow_id varchar(255) NOT NULL REFERENCES ${wf} (id) ON DELETE CASCADE,
          key varchar(255) NOT NULL,
          next_offset integer NOT NULL DEFAULT 0,
          closed boolean NOT NULL DEFAULT false,
          PRIMARY KEY (workflow_id, key)
        )`);
      await qr.query(`
        CREATE TABLE ${entries} (
          workflow_id varchar(255) NOT NULL REFERENCES ${wf} (id) ON DELETE CASCADE,
          key varchar(255) NOT NULL,
          "offset" integer NOT NULL,
          value json,
          attempt integer,
          at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (workflow_id, key, "offset")
        )`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP TABLE ${entries}`);
      await qr.query(`DROP TABLE ${streams}`);
    },
  };
}
