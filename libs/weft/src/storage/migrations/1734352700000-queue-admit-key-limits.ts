import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql } from '../repositories/queue-admit.js';

/**
 * A partitioned admission counts a key's rows only for the per-key limits the queue sets, and its
 * rate window by a seek in weft_workflows_partition_admitted_idx: it read every admission each
 * walked key ever had (docs/decisions/0048). Same arguments and result: replaced in place.
 */
export function queueAdmitKeyLimitsMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitKeyLimits1734352700000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true, true, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true, true, true)); // back to 1734352500000's
    },
  };
}
