import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/** Every table of docs/architecture.md (Tables) with the indexes the hot paths use. */
export function initialSchemaMigration(schema: string): MigrationInterface {
  const t = (table: string) => qualify(schema, table);
  return {
    name: 'InitialSchema1733140000000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`
        CREATE TABLE ${t('weft_workflows')} (
          id varchar(255) PRIMARY KEY,
          type varchar(255) NOT NULL,
          status varchar(16) NOT NULL,
          input json,
          output json,
          error json,
          parent_id varchar(255),
          run_number integer NOT NULL DEFAULT 1,
          deadline timestamptz,
          start_at timestamptz,
          created_at timestamptz NOT NULL DEFAULT now(),
          updated_at timestamptz NOT NULL DEFAULT now(),
          completed_at timestamptz,
          version integer NOT NULL DEFAULT 1,
          CONSTRAINT weft_workflows_status_ck CHECK (status IN
            ('pending','running','suspended','completed','failed','cancelled','timed_out'))
        )`);
      await qr.query(`CREATE INDEX weft_workflows_status_type_idx ON ${t('weft_workflows')} (status, type)`);
      await qr.query(`CREATE INDEX weft_workflows_parent_idx ON ${t('weft_workflows')} (parent_id) WHERE parent_id IS NOT NULL`);
      await qr.query(`CREATE INDEX weft_workflows_created_idx ON ${t('weft_workflows')} (created_at, id)`);

      await qr.query(`
        CREATE TABLE ${t('weft_operations')} (
          workflow_id varchar(255) NOT NULL REFERENCES ${t('weft_workflows')} (id) ON DELETE CASCADE,
          seq integer NOT NULL,
          kind varchar(32) NOT NULL,
          name varchar(255) NOT NULL,
          status varchar(16) NOT NULL,
          result json,
          error json,
          attempts integer NOT NULL DEFAULT 1,
          started_at timestamptz,
          completed_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (workflow_id, seq)
        )`);

      await qr.query(`
        CREATE TABLE ${t('weft_messages')} (
          id bigserial PRIMARY KEY,
          workflow_id varchar(255) NOT NULL REFERENCES ${t('weft_workflows')} (id) ON DELETE CASCADE,
          kind varchar(16) NOT NULL,
          name varchar(255) NOT NULL,
          payload json,
          consumed_seq integer,
          status varchar(16) NOT NULL DEFAULT 'pending',
          result json,
          created_at timestamptz NOT NULL DEFAULT now()
        )`);
      await qr.query(`CREATE INDEX weft_messages_unconsumed_idx ON ${t('weft_messages')} (workflow_id, id) WHERE consumed_seq IS NULL`);

      await qr.query(`
        CREATE TABLE ${t('weft_timers')} (
          id bigserial PRIMARY KEY,
          workflow_id varchar(255) NOT NULL REFERENCES ${t('weft_workflows')} (id) ON DELETE CASCADE,
          kind varchar(24) NOT NULL,
          seq integer NOT NULL DEFAULT -1,
          fire_at timestamptz NOT NULL
        )`);
      await qr.query(`CREATE INDEX weft_timers_fire_at_idx ON ${t('weft_timers')} (fire_at)`);
      await qr.query(`CREATE UNIQUE INDEX weft_timers_workflow_seq_uq ON ${t('weft_timers')} (workflow_id, kind, seq)`);

      // No foreign key: claim rows outlive purged workflows so epochs are never reset.
      await qr.query(`
        CREATE TABLE ${t('weft_workflow_claims')} (
          workflow_id varchar(255) PRIMARY KEY,
          epoch bigint NOT NULL DEFAULT 0,
          engine_id varchar(255),
          expires_at timestamptz,
          claimed_at timestamptz,
          version integer NOT NULL DEFAULT 1
        )`);
      await qr.query(
        `CREATE INDEX weft_workflow_claims_engine_idx ON ${t('weft_workflow_claims')} (engine_id) WHERE engine_id IS NOT NULL`,
      );
      await qr.query(
        `CREATE INDEX weft_workflow_claims_expires_idx ON ${t('weft_workflow_claims')} (expires_at) WHERE engine_id IS NOT NULL`,
      );

      await qr.query(`
        CREATE TABLE ${t('weft_global_lease')} (
          id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
          epoch bigint NOT NULL DEFAULT 0,
          holder varchar(255),
          expires_at timestamptz
        )`);
      await qr.query(`
        CREATE TABLE ${t('weft_ownership_marker')} (
          id smallint PRIMARY KEY DEFAULT 1 CHECK (id = 1),
          mode varchar(32) NOT NULL,
          established_at timestamptz NOT NULL DEFAULT now()
        )`);
    },
    async down(qr: QueryRunner): Promise<void> {
      for (const table of [
        'weft_ownership_marker',
        'weft_global_lease',
        'weft_workflow_claims',
        'weft_timers',
        'weft_messages',
        'weft_operations',
        'weft_workflows',
      ]) {
        await qr.query(`DROP TABLE IF EXISTS ${t(table)}`);
      }
    },
  };
}
