import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * The queue's running indexes lead with `status`, and their predicate names two statuses, so that a
 * statement's `status = 'running'` stays one of their index conditions (a predicate equal to it
 * would take it out). After an ANALYZE that saw no running workflow, the generic plans of the
 * admission and of the queue gauges counted a queue's running workflows through
 * weft_workflows_status_type_idx (every running workflow of every queue and type, a heap visit
 * each), once per key of a partitioned walk; a seek in these small indexes now costs less than
 * that scan whatever the statistics say (docs/decisions/0056). Rebuilt under the same names.
 */
export function runningIndexesLeadWithStatusMigration(schema: string): MigrationInterface {
  const wf = qualify(schema, 'weft_workflows');
  const queueIdx = qualify(schema, 'weft_workflows_queue_running_idx');
  const partitionIdx = qualify(schema, 'weft_workflows_partition_running_idx');
  return {
    name: 'RunningIndexesLeadWithStatus1734353700000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${queueIdx}`);
      await qr.query(`DROP INDEX ${partitionIdx}`);
      await qr.query(`CREATE INDEX weft_workflows_queue_running_idx ON ${wf} (status, queue)
        WHERE status IN ('running', 'suspended') AND queue IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_workflows_partition_running_idx ON ${wf} (status, queue, partition_key)
        WHERE status IN ('running', 'suspended') AND partition_key IS NOT NULL`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP INDEX ${queueIdx}`);
      await qr.query(`DROP INDEX ${partitionIdx}`);
      await qr.query(`CREATE INDEX weft_workflows_queue_running_idx ON ${wf} (queue) WHERE status = 'running' AND queue IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_workflows_partition_running_idx ON ${wf} (queue, partition_key)
        WHERE status = 'running' AND partition_key IS NOT NULL`);
    },
  };
}
