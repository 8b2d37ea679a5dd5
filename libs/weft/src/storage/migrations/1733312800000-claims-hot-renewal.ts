import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * Renewal rewrites expires_at of every held claim each pass. With no index on expires_at and
 * free space left in each page, PostgreSQL updates those rows in place (HOT: no index entries),
 * which roughly halves a 100k-claim pass (docs/decisions/0004). The reclaim scan starts from
 * running workflows and never used that index.
 */
export function claimsHotRenewalMigration(schema: string): MigrationInterface {
  const claims = qualify(schema, 'weft_workflow_claims');
  return {
    name: 'ClaimsHotRenewal1733312800000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX IF EXISTS ${qualify(schema, 'weft_workflow_claims_expires_idx')}`);
      await qr.query(`ALTER TABLE ${claims} SET (fillfactor = 70)`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${claims} RESET (fillfactor)`);
      await qr.query(`CREATE INDEX weft_workflow_claims_expires_idx ON ${claims} (expires_at) WHERE engine_id IS NOT NULL`);
    },
  };
}
