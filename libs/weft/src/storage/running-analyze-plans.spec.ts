// Statements about running workflows reach them by their queue's running indexes or by key,
// whatever weft_workflows looked like at its last ANALYZE. Analyzed between bursts, with no
// workflow running, the planner took 'running' for absent, and generic plans read every running
// workflow of every queue and type through weft_workflows_status_type_idx, a heap visit each:
// once per key of a partitioned admission's walk, for the queue gauges, for each ending workflow
// of an end commit's hand-off, and for each waiting message of the owner-side poll
// (docs/decisions/0056-running-workflows-after-an-empty-analyze.md). Likewise a batched advance's
// consumption, after an ANALYZE that saw no unconsumed message, read every unconsumed message
// through weft_messages_pending_kind_idx (since dropped) instead of its own. Plans read through
// auto_explain (PL/pgSQL's statements are not reachable by EXPLAIN) or EXPLAIN of the generic plan.
import { capturePlans, endsHandingOff, planNodes, plansOf, type PlanNode, usePlanDatabase } from '../../../../test/support/plans.js';
import { AdvanceStatements } from './repositories/advance-statements.js';
import { MessageRepository } from './repositories/message.repository.js';
import { QueueRepository } from './repositories/queue.repository.js';
import { type SqlClient, statementName } from './sql-client.js';

/** The indexes of weft_workflows a plan reads. */
const indexes = (plan: PlanNode) =>
  planNodes(plan).flatMap((n) => (n['Index Name']?.startsWith('weft_workflows') ? [n['Index Name']] : []));

describe('running workflows after an ANALYZE that saw no running workflow (real PostgreSQL)', () => {
  const env = usePlanDatabase();
  let plans: PlanNode[] = [];

  beforeAll(async () => {
    const insert = (n: number, status: string, queue: string | null, keyed: boolean, type = 't') =>
      env.db.query(
        `INSERT INTO weft.weft_workflows (id, type, status, input, version, queue, partition_key, created_at)
         SELECT $2 || '-' || coalesce($3, 'none') || '-' || $5 || '-' || g, $5, $2, 'null', 1, $3,
                CASE WHEN $4 THEN 'tenant-' || (g % 100) END, now() + (g || ' milliseconds')::interval
         FROM generate_series(1, $1::int) g`,
        [n, status, queue, keyed, type],
      );
    // Bursts that went through (running, then ended), vacuumed and analyzed once they had, then the next one.
    for (let burst = 0; burst < 3; burst++) {
      await insert(2000, 'running', 'parts', true);
      await insert(2000, 'running', 'plain', false);
      await insert(2000, 'running', null, false, 'other');
      await env.db.query(`UPDATE weft.weft_workflows SET status = 'completed', id = $1 || id WHERE status = 'running'`, [`done${burst}-`]);
      // Each took a signal on its way.
      await env.db.query(
        `INSERT INTO weft.weft_messages (workflow_id, kind, name, consumed_seq, status)
         SELECT id, 'signal', 's', 0, 'consumed' FROM weft.weft_workflows WHERE id LIKE $1`,
        [`done${burst}-%`],
      );
      await env.db.query('VACUUM ANALYZE weft.weft_workflows, weft.weft_messages');
    }
    await insert(1000, 'enqueued', 'parts', true);
    await insert(1000, 'enqueued', 'plain', false);
    await insert(100, 'running', 'parts', true);
    await insert(40, 'running', 'plain', false);
    await insert(1000, 'running', null, false, 'other'); // long waits of a type without a queue
    await env.db.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name) SELECT 'running-none-other-' || g, 'signal', 's'
                        FROM generate_series(1, 1000) g`);
    plans = await capturePlans(env.db);
  });

  /** Every index of weft_workflows the plans of `run`'s statements read, in a transaction rolled back. */
  async function indexesOf(run: () => Promise<unknown>, generic = false): Promise<string[]> {
    const caught = await plansOf(env.db, plans, run, generic);
    expect(caught.length).toBeGreaterThan(0);
    return [...new Set(caught.flatMap(indexes))].sort();
  }

  it.each([true, false])('the admission (partitioned: %s) counts through the running indexes, not status_type_idx', async (partitioned) => {
    const used = await indexesOf(() =>
      env.db.query(
        `SELECT * FROM weft.weft_queue_admit($1, 12, 50, NULL, NULL, NULL, 0, ARRAY['t'], NULL, NULL, NULL, NULL, NULL, $2, $3, NULL, 0)`,
        [partitioned ? 'parts' : 'plain', partitioned, partitioned ? 2 : null],
      ),
    );
    expect(used).not.toContain('weft_workflows_status_type_idx');
    expect(used).toContain(partitioned ? 'weft_workflows_partition_running_idx' : 'weft_workflows_queue_running_idx');
  });

  /** The indexes of weft_workflows in the generic plan of `text` (a repository's statement) with `values`. */
  async function genericIndexes(text: string, types: string, values: string): Promise<string[]> {
    await env.db.query('BEGIN');
    try {
      await env.db.query('SET LOCAL plan_cache_mode = force_generic_plan');
      await env.db.query(`PREPARE probe(${types}) AS ${text}`);
      const [row] = (await env.db.query(`EXPLAIN (FORMAT JSON) EXECUTE probe(${values})`)).rows;
      return [...new Set(indexes((row['QUERY PLAN'] as Array<{ Plan: PlanNode }>)[0].Plan))].sort();
    } finally {
      await env.db.query('ROLLBACK');
      await env.db.query('DEALLOCATE ALL');
    }
  }

  /** The text a repository sends for `call`, read through a client that only records it. */
  function textOf(call: (db: SqlClient) => Promise<unknown>): Promise<string> {
    let text = '';
    return call({ manager: {}, query: async (sql: string) => ((text = sql), []) } as unknown as SqlClient).then(() => text);
  }

  it("the queue gauges' generic plan counts through queue_running_idx", async () => {
    const text = await textOf((db) => new QueueRepository(db, 'weft').stats(['parts', 'plain']));
    const used = await genericIndexes(text, 'varchar[], int', `'{parts,plain}', 10000`);
    expect(used).not.toContain('weft_workflows_status_type_idx');
    expect(used).toContain('weft_workflows_queue_running_idx');
  });

  it.each([false, true])("the owner-side poll's generic plan (owned: %s) probes the workflows by key", async (owned) => {
    const text = await textOf((db) => new MessageRepository(db, 'weft').poll(owned ? 'e' : null, ['other'], 100));
    const used = await genericIndexes(text, owned ? 'text[], int, text' : 'text[], int', `'{other,t}', 100${owned ? ", 'e'" : ''}`);
    expect(used).toEqual(['weft_workflows_pkey']);
  });

  it("an end commit's hand-off, a batch of three, reads the ending workflows by key", async () => {
    const used = await indexesOf(() => env.db.query(endsHandingOff(['running-plain-t-1', 'running-plain-t-2', 'running-plain-t-3'])), true);
    expect(used).not.toContain('weft_workflows_status_type_idx');
    expect(used).toContain('weft_workflows_pkey');
  });

  it("a batched advance's consumption seeks the batch's messages", async () => {
    const ids = await env.db.query<{ id: string; workflow_id: string }>(
      `SELECT id::text, workflow_id FROM weft.weft_messages WHERE workflow_id IN ('running-none-other-1', 'running-none-other-2', 'running-none-other-3')`,
    );
    expect(ids.rows).toHaveLength(3);
    const commands = ids.rows.map((m) => ({
      workflowId: m.workflow_id,
      expectedVersion: 1,
      operations: [{ seq: 0, kind: 'waitForSignal' as const, name: 's', status: 'completed' as const, result: 1 }],
      consume: [{ id: m.id, seq: 0 }],
    }));
    const { sql, params } = new AdvanceStatements('weft', () => 0).for(commands);
    const caught = await plansOf(
      env.db,
      plans,
      async () => {
        const done = await env.db.query({ name: statementName(sql), text: sql, values: params });
        expect(done.rowCount).toBe(3);
      },
      true,
    );
    const used = [
      ...new Set(
        caught.flatMap((p) => planNodes(p).flatMap((n) => (n['Index Name']?.startsWith('weft_messages') ? [n['Index Name']] : []))),
      ),
    ];
    expect(used).toEqual(['weft_messages_unconsumed_idx']);
  });
});
