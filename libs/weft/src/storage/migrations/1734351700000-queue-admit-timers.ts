import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql, dropAdmitFunctionSql } from '../repositories/queue-admit.js';

/**
 * The admission function also says whether an admitted workflow may have timer rows (its execution
 * deadline's), as the end commit's hand-off does: a run without any then ends without looking for
 * timers to delete (docs/performance.md, "Queues"). It returns one more column: dropped, not replaced.
 */
export function queueAdmitTimersMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitTimers1734351700000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, true, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, true, true)); // back to 1734351300000's
    },
  };
}
