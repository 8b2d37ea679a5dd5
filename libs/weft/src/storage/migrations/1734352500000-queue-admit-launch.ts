import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql, dropAdmitFunctionSql } from '../repositories/queue-admit.js';

/**
 * The admission function also returns what an admitted run begins with beyond its input: its
 * start's headers, attributes and trace context (NULL when the start had none), so the engine
 * launches it without reading its row again (docs/decisions/0046). More columns: dropped, not replaced.
 */
export function queueAdmitLaunchMigration(schema: string): MigrationInterface {
  return {
    name: 'QueueAdmitLaunch1734352500000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, true, true, true, true, true));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, true, true, true, true)); // back to 1734352100000's
    },
  };
}
