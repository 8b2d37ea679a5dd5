import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Drops `weft_workflow_claims_engine_idx`. With it, every claim a start inserts wrote two index
 * entries and every release on a terminal commit (which clears `engine_id`) was a non-HOT update
 * writing new entries in both indexes. No statement on the hot path reads by engine: renewal
 * and release find claims by key; the engines view reaches held claims through the running
 * workflows (docs/performance.md).
 */
export function claimsWithoutEngineIndexMigration(schema: string): MigrationInterface {
  return {
    name: 'ClaimsWithoutEngineIndex1733918000000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX IF EXISTS ${qualify(schema, 'weft_workflow_claims_engine_idx')}`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(
        `CREATE INDEX weft_workflow_claims_engine_idx ON ${qualify(schema, 'weft_workflow_claims')} (engine_id) WHERE engine_id IS NOT NULL`,
      );
    },
  };
}
