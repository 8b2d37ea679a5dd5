import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Where a repaired run came from (engine.fork, engine.retry; docs/api.md, "Repair"): `forked_from`
 * on a fork ({ workflowId, runNumber, fromSeq }), `retried_from` on a retried run ({ runNumber,
 * fromSeq }). Shown by describe; null otherwise.
 */
export function repairOriginsMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'RepairOrigins1734177850000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN forked_from jsonb, ADD COLUMN retried_from jsonb`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN forked_from, DROP COLUMN retried_from`);
    },
  };
}
