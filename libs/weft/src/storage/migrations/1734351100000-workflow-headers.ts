import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `headers`: the string map the `start` interceptors left on a start (docs/interceptors.md),
 * stored with the workflow so that every engine that runs it (after a takeover, a replay, a
 * continue-as-new) hands the same headers to its `run` and `step` interceptors. A payload: it
 * goes through the codec (docs/codecs.md). Null when there are none.
 */
export function workflowHeadersMigration(schema: string): MigrationInterface {
  return {
    name: 'WorkflowHeaders1734351100000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} ADD COLUMN headers json`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} DROP COLUMN headers`);
    },
  };
}
