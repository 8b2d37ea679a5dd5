import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql } from '../repositories/queue-admit.js';

/**
 * An unpartitioned queue's admission runs a query without the partitioned walk's CTEs: the
 * function's one query for both planned and started up every partitioned node on each call and
 * each replan, which the first admission of a burst waited for (docs/decisions/0053). Same
 * arguments and result: replaced in place.
 */
export function queueAdmitPlainBranchMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitPlainBranch1734353100000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true, true, true, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true, true, true, true)); // back to 1734352700000's
    },
  };
}
