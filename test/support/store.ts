// The storage specs' setup: a database of the test file's own, opened as an engine opens it
// (schema 'weft', migrated), with a WorkflowStore on it; closed and dropped after the file's tests.
import { openDatabase, type OpenedDatabase } from '../../libs/weft/src/storage/data-source.js';
import { WorkflowStore } from '../../libs/weft/src/storage/workflow-store.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestStore {
  tdb: TestDatabase;
  db: OpenedDatabase;
  store: WorkflowStore;
}

/** Filled in before all tests of the file (read its fields inside tests and hooks, not at load). */
export function useTestStore({ poolSize = 20 } = {}): TestStore {
  const env = {} as TestStore;
  beforeAll(async () => {
    env.tdb = await createTestDatabase();
    env.db = await openDatabase({ database: { url: env.tdb.url, poolSize }, schema: 'weft' });
    env.store = new WorkflowStore(env.db.sql, env.db.schema);
  });
  afterAll(async () => {
    await env.db?.close();
    await env.tdb?.drop();
  });
  return env;
}
