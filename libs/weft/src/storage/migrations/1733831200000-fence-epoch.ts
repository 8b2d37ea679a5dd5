import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `fence_epoch`: the epoch a fenced write of the workflow must carry: its claim's epoch while the
 * claim has a holder, else null (docs/decisions/0008). Every statement that hands the claim over or
 * lets it go sets it in the same statement, so the advance's versioned UPDATE fences by itself
 * instead of locking the claim row on every commit. Held claims of rows that can still be
 * written are copied; every other row has none.
 */
export function fenceEpochMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'FenceEpoch1733831200000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN fence_epoch bigint`);
      await qr.query(
        `UPDATE ${wf} w SET fence_epoch = c.epoch FROM ${qualify(schema, 'weft_workflow_claims')} c
         WHERE c.workflow_id = w.id AND c.engine_id IS NOT NULL AND w.status IN ('pending', 'enqueued', 'running', 'suspended')`,
      );
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN fence_epoch`);
    },
  };
}
