import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunctionSql, dropAdmitFunctionSql, retakeFunction, retakeFunctionSql } from '../repositories/queue-admit.js';
import { qualify } from '../schema-name.js';

/**
 * `releaseWhileWaiting` (docs/queues.md, docs/decisions/0040): a parked run's slot marked released
 * (`slot_released_at`) and, once it is woken, its wish to take one again (`slot_wanted_at`); the
 * admission function counts neither a released slot nor, for fresh admissions, a wanted one as
 * free, and a second function takes slots again under the same queue lock. The admission function
 * also says whether an admitted run holds a singleton key (its end wakes the key's next waiter).
 */
export function queueSlotReleaseMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'QueueSlotRelease1734351200000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN slot_released_at timestamptz, ADD COLUMN slot_wanted_at timestamptz`);
      await qr.query(`CREATE INDEX weft_workflows_slot_wanted_idx ON ${wf} (queue, slot_wanted_at, id)
        WHERE status = 'running' AND slot_wanted_at IS NOT NULL`);
      // It returns one more column (whether an admitted run holds a singleton key): dropped, not replaced.
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, true, false)); // as it was then: 1734351300000 replaces it
      await qr.query(retakeFunctionSql(schema));
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP FUNCTION ${retakeFunction(schema)}`);
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_slot_wanted_idx')}`);
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN slot_wanted_at, DROP COLUMN slot_released_at`);
      await qr.query(dropAdmitFunctionSql(schema));
      await qr.query(admitFunctionSql(schema, false)); // back to 1734178039000's
    },
  };
}
