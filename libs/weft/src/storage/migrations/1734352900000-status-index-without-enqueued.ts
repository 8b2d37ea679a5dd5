import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * weft_workflows_status_type_idx holds no enqueued row (the queue indexes hold them): after an
 * ANALYZE that saw no enqueued workflow, the admission's and the hand-off's generic plans read
 * every enqueued row through it and sorted them, instead of seeking the queue indexes
 * (docs/decisions/0052). Rebuilt under the same name.
 */
export function statusIndexWithoutEnqueuedMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const idx = qualify(schema, 'weft_workflows_status_type_idx');
  return {
    name: 'StatusIndexWithoutEnqueued1734352900000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${idx}`);
      await qr.query(`CREATE INDEX weft_workflows_status_type_idx ON ${wf} (status, type) WHERE status <> 'enqueued'`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${idx}`);
      await qr.query(`CREATE INDEX weft_workflows_status_type_idx ON ${wf} (status, type)`);
    },
  };
}
