import { MigrationInterface, QueryRunner } from 'typeorm';
import { admitFunction, admitFunctionSql } from '../repositories/queue-admit.js';
import { qualify } from '../schema-name.js';

/**
 * Partitioned queues and admission in one round trip (docs/queues.md, docs/decisions/0026):
 * a workflow's `partition_key`; indexes that walk a queue's keys with work and count each key's
 * running rows and recent admissions (all partial: rows outside a partitioned queue never enter
 * them); where the last pass left its walk over the keys; and the admission function, which
 * locks the queue's row and admits under a fresh snapshot in one call. Singleton starts: a
 * workflow's `singleton_key`, unique per type among live workflows.
 */
export function queuePartitionsMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const queues = qualify(schema, 'weft_queues');
  return {
    name: 'QueuePartitions1734178039000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN partition_key varchar(255)`);
      await qr.query(`ALTER TABLE ${queues} ADD COLUMN partition_cursor varchar(255)`);
      await qr.query(`CREATE INDEX weft_workflows_partition_enqueued_idx ON ${wf} (queue, partition_key, priority, created_at, id)
        WHERE status = 'enqueued' AND partition_key IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_workflows_partition_running_idx ON ${wf} (queue, partition_key)
        WHERE status = 'running' AND partition_key IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_workflows_partition_admitted_idx ON ${wf} (queue, partition_key, admitted_at)
        WHERE admitted_at IS NOT NULL AND partition_key IS NOT NULL`);
      await qr.query(admitFunctionSql(schema, false)); // as it was then: 1734351200000 replaces it
      // Singletons: at most one live workflow of a type per key.
      await qr.query(`ALTER TABLE ${wf} ADD COLUMN singleton_key varchar(255)`);
      await qr.query(`CREATE UNIQUE INDEX weft_workflows_singleton_idx ON ${wf} (type, singleton_key)
        WHERE singleton_key IS NOT NULL AND status IN ('pending', 'enqueued', 'running', 'suspended')`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${qualify(schema, 'weft_workflows_singleton_idx')}`);
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN singleton_key`);
      await qr.query(`DROP FUNCTION ${admitFunction(schema)}`);
      for (const idx of ['partition_admitted', 'partition_running', 'partition_enqueued'])
        await qr.query(`DROP INDEX ${qualify(schema, `weft_workflows_${idx}_idx`)}`);
      await qr.query(`ALTER TABLE ${queues} DROP COLUMN partition_cursor`);
      await qr.query(`ALTER TABLE ${wf} DROP COLUMN partition_key`);
    },
  };
}
