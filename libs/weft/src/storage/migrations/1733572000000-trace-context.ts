import { MigrationInterface, QueryRunner } from 'typeorm';
import { qualify } from '../schema-name.js';

/**
 * `trace_context`: a W3C traceparent (55 characters), written by the start (the starter's span)
 * and by a run's first commit after each of its workflow spans begins, so the engine that loads
 * the run next (a takeover among them) links its span to it. Nullable: an engine of the previous
 * release, or one with tracing off, never writes it.
 */
export function traceContextMigration(schema: string): MigrationInterface {
  return {
    name: 'TraceContext1733572000000',
    async up(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} ADD COLUMN trace_context varchar(64)`);
    },
    async down(qr: QueryRunner): Promise<void> {
      await qr.query(`ALTER TABLE ${qualify(schema, 'weft_workflows')} DROP COLUMN trace_context`);
    },
  };
}
