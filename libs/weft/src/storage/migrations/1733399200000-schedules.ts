import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/** weft_schedules: one row per schedule; the maintenance pass fires the due ones (docs/schedules.md). */
export function schedulesMigration(schema: string): MigrationInterface {
  const t = qualify(schema, 'weft_schedules');
  return {
    name: 'Schedules1733399200000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`
        CREATE TABLE ${t} (
          id varchar(255) PRIMARY KEY,
          workflow_type varchar(255) NOT NULL,
          cron varchar(255),
          every_ms bigint,
          timezone varchar(64),
          input json,
          overlap varchar(16) NOT NULL DEFAULT 'skip',
          catchup_window_ms bigint,
          paused boolean NOT NULL DEFAULT false,
          source varchar(16) NOT NULL DEFAULT 'api',
          next_fire_at timestamptz NOT NULL,
          buffered_fire_at timestamptz,
          last_workflow_id varchar(255),
          recent_runs json NOT NULL DEFAULT '[]',
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now(),
          version integer NOT NULL DEFAULT 1,
          CONSTRAINT weft_schedules_rule_ck CHECK ((cron IS NULL) <> (every_ms IS NULL)),
          CONSTRAINT weft_schedules_overlap_ck CHECK (overlap IN ('skip', 'buffer-one', 'allow-all', 'cancel-other')),
          CONSTRAINT weft_schedules_source_ck CHECK (source IN ('decorator', 'api'))
        )`);
      await qr.query(`CREATE INDEX weft_schedules_due_idx ON ${t} (next_fire_at) WHERE NOT paused`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`DROP TABLE ${t}`);
    },
  };
}
