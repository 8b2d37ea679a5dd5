// The entities are public (users query Weft's tables with TypeORM) and the migrations create the
// tables: both must describe the same schema. TypeORM's synchronize builds one schema from the
// entities, the migrations another, and their catalogs are compared column by column and index by index.
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { openDatabase } from './data-source.js';
import { WEFT_ENTITIES } from './entities/index.js';

interface Column {
  table_name: string;
  column_name: string;
  data_type: string;
  character_maximum_length: number | null;
  is_nullable: string;
  column_default: string | null;
}

async function columns(tdb: TestDatabase, schema: string): Promise<string[]> {
  const rows = await tdb.query<Column>(
    `SELECT table_name, column_name, data_type, character_maximum_length, is_nullable, column_default
       FROM information_schema.columns WHERE table_schema = $1 AND table_name <> 'weft_schema_migrations'
      ORDER BY table_name, column_name`,
    [schema],
  );
  // Defaults as PostgreSQL stores them, without the schema name; a number literal with or without its cast.
  const def = (d: string | null) => (d ?? '').replaceAll(`${schema}.`, '').replace(/^'(-?\d+)'::\w+$/, '$1');
  return rows.map(
    (c) =>
      `${c.table_name}.${c.column_name} ${c.data_type}${c.character_maximum_length ? `(${c.character_maximum_length})` : ''} ` +
      `${c.is_nullable === 'YES' ? 'null' : 'not null'} ${def(c.column_default)}`.trim(),
  );
}

async function indexes(tdb: TestDatabase, schema: string): Promise<string[]> {
  const rows = await tdb.query<{ tablename: string; indexdef: string }>(
    `SELECT tablename, indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename <> 'weft_schema_migrations' ORDER BY tablename, indexdef`,
    [schema],
  );
  // Index and constraint names differ (TypeORM names primary keys by hash); what is indexed must not.
  return rows.map((r) => `${r.tablename}: ${r.indexdef.replaceAll(`${schema}.`, '').replace(/INDEX \S+ ON/, 'INDEX ON')}`).sort();
}

describe('entities and migrations', () => {
  let tdb: TestDatabase;
  beforeAll(async () => {
    tdb = await createTestDatabase();
  });
  afterAll(async () => tdb?.drop());

  it('describe the same tables, columns and indexes', async () => {
    const migrated = await openDatabase({ database: { url: tdb.url }, schema: 'by_migrations' });
    await migrated.close();
    await tdb.query('CREATE SCHEMA by_entities');
    const synced = new DataSource({ type: 'postgres', url: tdb.url, schema: 'by_entities', entities: WEFT_ENTITIES, synchronize: true });
    await synced.initialize();
    expect(await columns(tdb, 'by_entities')).toEqual(await columns(tdb, 'by_migrations'));
    // An index the entities declare with synchronize: false (an operator class TypeORM cannot
    // express) is the migrations' alone: it must exist there, under its declared name.
    const unsynced = WEFT_ENTITIES.flatMap((e) =>
      synced
        .getMetadata(e)
        .indices.filter((i) => i.synchronize === false)
        .map((i) => i.name),
    );
    expect(unsynced).toEqual(['weft_workflows_attributes_idx']);
    const named = await tdb.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE schemaname = 'by_migrations'`);
    for (const name of unsynced) expect(named.map((r) => r.indexname)).toContain(name);
    const byMigrations = (await indexes(tdb, 'by_migrations')).filter((d) => !d.includes('jsonb_path_ops'));
    expect(await indexes(tdb, 'by_entities')).toEqual(byMigrations);
    await synced.destroy();
  });
});
