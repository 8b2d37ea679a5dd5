import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `workflow_version`: the `@Workflow(name, { version })` of the code that started the run (or
 * continued it as new), shown by describe and list. Nullable: a type without a version, or a
 * run started by an engine of an earlier release.
 */
export function workflowVersionMigration(schema: string): MigrationInterface {
  return {
    name: 'WorkflowVersion1733744800000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} ADD COLUMN workflow_version varchar(64)`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} DROP COLUMN workflow_version`);
    },
  };
}
