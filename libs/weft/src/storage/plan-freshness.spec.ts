// A pooled connection keeps the generic plan it made while weft_workflows was a few pages long
// (a sequential scan) for as long as it lives, unless something invalidates it; with autovacuum
// off nothing does. PlanFreshness reads the tables' sizes and, when one crosses a power of two,
// makes every connection discard its plans before its next statement (docs/decisions/0009).
import { createTestDatabase, TestDatabase } from '../../../../test/support/database.js';
import { openDatabase, OpenedDatabase } from './data-source.js';
import { PlanFreshness, sizeClass } from './plan-freshness.js';
import { advanceParams, advanceSql } from './repositories/workflow-advance.js';
import { statementName } from './sql-client.js';
import type { AdvanceCommand } from './types.js';
import { shapeOf } from './repositories/advance-shapes.js';

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  Plans?: PlanNode[];
}

const scansOfWorkflows = (n: PlanNode): string[] => [
  ...(n['Relation Name'] === 'weft_workflows' && n['Node Type'].endsWith('Scan') ? [n['Node Type']] : []),
  ...(n.Plans ?? []).flatMap(scansOfWorkflows),
];

describe('sizeClass', () => {
  it('is one class under 8 pages, then one per power of two, up to 2^16 pages', () => {
    expect([0, 1, 7].map(sizeClass)).toEqual([0, 0, 0]);
    expect([8, 15, 16, 31, 32].map(sizeClass)).toEqual([1, 1, 2, 2, 3]);
    expect([2 ** 16, 2 ** 20].map(sizeClass)).toEqual([14, 14]);
  });
});

describe('PlanFreshness (real PostgreSQL, autovacuum or not)', () => {
  let tdb: TestDatabase;
  let db: OpenedDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    // One connection: every statement below runs on it, so its cached plans are the ones explained.
    db = await openDatabase({ database: { url: tdb.url, poolSize: 1 }, schema: 'weft' });
    await tdb.query(`ALTER TABLE weft.weft_workflows SET (autovacuum_enabled = false)`);
  });
  afterAll(async () => {
    await db?.close();
    await tdb?.drop();
  });

  it('replaces a plan made on a tiny table once the table has grown', async () => {
    // Two steps' records (a batch, as under load) for workflows that do not exist: refused, nothing written.
    const cmd: AdvanceCommand = {
      workflowId: 'none-such',
      expectedVersion: 1,
      operations: [{ seq: 0, kind: 'step', name: 'a', status: 'completed', result: 1 }],
    };
    const batch = [cmd, { ...cmd, workflowId: 'none-such-2' }];
    const sql = advanceSql('weft', shapeOf(cmd));
    const run = () => db.sql.query(sql, advanceParams(batch));
    const plan = async () => {
      const [row] = await db.sql.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(
        `EXPLAIN (FORMAT JSON) EXECUTE ${statementName(sql)}(${advanceParams(batch)
          .map((p) => `'${p.replace(/'/g, "''")}'`)
          .join(', ')})`,
      );
      return scansOfWorkflows(row['QUERY PLAN'][0].Plan);
    };
    const freshness = new PlanFreshness(db.sql, 'weft');
    await freshness.refresh(); // the sizes at start: the baseline

    await tdb.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input) SELECT 'w' || g, 't', 'completed', 'null' FROM generate_series(1, 20) g`,
    );
    for (let i = 0; i < 8; i++) await run(); // past the 5 custom plans: the connection now keeps a generic one
    expect(await plan()).toEqual(['Seq Scan']);

    // The table grows by thousands of rows; nothing invalidates the cached plan.
    await tdb.query(
      `INSERT INTO weft.weft_workflows (id, type, status, input) SELECT 'x' || g, 't', 'completed', 'null' FROM generate_series(1, 20000) g`,
    );
    for (let i = 0; i < 3; i++) await run();
    expect(await plan()).toEqual(['Seq Scan']); // the hazard: without a refresh, every commit scans 20,000 rows

    expect(await freshness.refresh()).toBe(true);
    expect(db.sql.plans.value).toBe(1);
    for (let i = 0; i < 8; i++) await run();
    expect(db.sql.plans.discards).toBe(1); // one connection, one DISCARD PLANS
    expect(await plan()).not.toContain('Seq Scan');
    expect(await freshness.refresh()).toBe(false); // same size class: nothing to do
  });
});
