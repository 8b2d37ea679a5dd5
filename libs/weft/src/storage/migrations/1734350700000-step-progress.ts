import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `weft_step_progress`: a running step's last heartbeat, its attempt and its first start, kept
 * so that the engine that takes the workflow over resumes the step from them, and the outcome an
 * external completion gave it (engine.completeStep / failStep) (docs/long-steps.md).
 * Written in batches off the hot path; removed when the step ends, or with its workflow.
 */
export function stepProgressMigration(schema: string): MigrationInterface {
  const progress = qualify(schema, 'weft_step_progress');
  const wf = qualify(schema, 'weft_workflows');
  return {
    name: 'StepProgress1734350700000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`
        CREATE TABLE ${progress} (
          workflow_id varchar(255) NOT NULL REFERENCES ${wf} (id) ON DELETE CASCADE,
          run_number integer NOT NULL,
          seq integer NOT NULL,
          attempt integer NOT NULL,
          first_started_at timestamptz NOT NULL,
          has_details boolean NOT NULL DEFAULT false,
          details json,
          completion json,
          beat_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (workflow_id, run_number, seq)
        )`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP TABLE ${progress}`);
    },
  };
}
