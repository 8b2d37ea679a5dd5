import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * The GIN index `list({ attributes })` reads (its containment filters, `attributes @> ...`).
 * Partial: a workflow without attributes (most of them) adds no index entry to its start.
 * jsonb_path_ops: an entry per key and value together. With the default jsonb_ops a key every row
 * has (`tenant`) is an entry matching every row, and the planner costed the index above a
 * sequential scan (storage/list-plans.spec.ts).
 */
export function attributesIndexMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'AttributesIndex1734177840000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(
        `CREATE INDEX weft_workflows_attributes_idx ON ${wf} USING gin (attributes jsonb_path_ops) WHERE attributes IS NOT NULL`,
      );
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_attributes_idx')}`);
    },
  };
}
