import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * The GIN index `list({ attributes })` reads (its containment filters, `attributes @> ...`).
 * Partial: a workflow without attributes (most of them) adds no index entry to its start.
 */
export function attributesIndexMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'AttributesIndex1734177840000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`CREATE INDEX weft_workflows_attributes_idx ON ${wf} USING gin (attributes) WHERE attributes IS NOT NULL`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_attributes_idx')}`);
    },
  };
}
