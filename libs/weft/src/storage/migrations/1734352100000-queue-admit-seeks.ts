import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql } from '../repositories/queue-admit.js';

/**
 * The admission function's UPDATE finds its rows by id alone, and its walk over a partitioned
 * queue's keys starts with a seek past the cursor: both read the queue's backlog before, on every
 * call (docs/decisions/0045-admission-reads-no-backlog.md). Same arguments and output: replaced
 * in place.
 */
export function queueAdmitSeeksMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitSeeks1734352100000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(admitFunctionSql(schema, true, true, true)); // back to 1734351700000's
    },
  };
}
