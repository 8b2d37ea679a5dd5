import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `attributes`: what the current run set with ctx.setAttributes, merged by the advance statement
 * (docs/concepts.md). Null until a run sets one; a continue-as-new or a restart clears it. The index that
 * filtering by attributes needs comes with that filter.
 */
export function workflowAttributesMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'WorkflowAttributes1734091400000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN attributes jsonb`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN attributes`);
    },
  };
}
