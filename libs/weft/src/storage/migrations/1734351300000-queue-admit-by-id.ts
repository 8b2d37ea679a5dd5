import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql } from '../repositories/queue-admit.js';

/**
 * The admission function's UPDATE finds the rows it admits by id (docs/decisions/0042): its generic
 * plan hashed every enqueued row of every queue to join the few it picked, on every call. Same
 * arguments and result: replaced in place.
 */
export function queueAdmitByIdMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitById1734351300000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, false)); // back to 1734351200000's
    },
  };
}
