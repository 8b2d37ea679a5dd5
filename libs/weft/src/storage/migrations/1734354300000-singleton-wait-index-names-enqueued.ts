import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * weft_workflows_singleton_wait_idx's predicate names `enqueued` beside `pending`, as the probes for
 * a key's waiters do (SingletonWaits): no enqueued workflow waits for a key (a waiter takes its key
 * while pending), so it holds the same rows, and weft_workflows_status_type_idx (which holds no
 * enqueued row, 0052) can serve no such probe. After an ANALYZE that saw no pending workflow, the
 * probes for a key's older or oldest waiter read every pending workflow of the type through that
 * index (docs/decisions/0061). Rebuilt under the same name.
 */
export function singletonWaitIndexNamesEnqueuedMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const idx = qualify(schema, 'weft_workflows_singleton_wait_idx');
  return {
    name: 'SingletonWaitIndexNamesEnqueued1734354300000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${idx}`);
      await qr.query(`CREATE INDEX weft_workflows_singleton_wait_idx ON ${wf} (type, singleton_wait, created_at, id)
        WHERE singleton_wait IS NOT NULL AND status IN ('pending', 'enqueued')`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${idx}`);
      await qr.query(`CREATE INDEX weft_workflows_singleton_wait_idx ON ${wf} (type, singleton_wait, created_at, id)
        WHERE singleton_wait IS NOT NULL AND status = 'pending'`);
    },
  };
}
