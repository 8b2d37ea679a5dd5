// A partitioned queue's end runs the queue's admission in its own commit (docs/decisions/0054):
// the key whose turn it is (after the cursor, with room under its limit), not the ending run's
// key, and never a key at its limit. The engines poll every 60 s here: whatever runs within the
// tests' deadlines was admitted by an end or a nudged pass, not by the poll.
import pg from 'pg';
import { useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';
import type { WeftEngine } from '../engine.js';

/** Runs that hold their slot until released, each on its own gate. */
const began = new Set<string>();
const gates = new Map<string, () => void>();
class Gated {
  async run(ctx: WorkflowContext) {
    await ctx.step('hold', async () => {
      began.add(ctx.workflowId);
      await new Promise<void>((r) => gates.set(ctx.workflowId, r));
    });
  }
}
const release = (id: string) => gates.get(id)!();

const queues = { p: { concurrency: 3, partition: { concurrency: 1 } } };
const slow = { timerPollInterval: '60s', ownership: 'workflow-lease', queues } as const;

describe('a partitioned end admits in its commit (real PostgreSQL)', () => {
  const env = useTestEngines();
  let sql: pg.Client;
  beforeAll(async () => {
    sql = new pg.Client({ connectionString: env.tdb.url });
    sql.on('error', () => undefined);
    await sql.connect();
  });
  afterAll(() => sql.end());
  beforeEach(() => {
    began.clear();
    gates.clear();
  });
  const statuses = async (ids: string[]) =>
    Object.fromEntries(
      (await sql.query<{ id: string; status: string }>(`SELECT id, status FROM weft.weft_workflows WHERE id = ANY($1)`, [ids])).rows.map(
        (r) => [r.id, r.status],
      ),
    );
  /** The transaction that last wrote the workflow's row, and the one that wrote its claim. */
  const xmins = async (id: string) =>
    (
      await sql.query<{ row: string; claim: string | null }>(
        `SELECT w.xmin::text AS row, c.xmin::text AS claim FROM weft.weft_workflows w
         LEFT JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id WHERE w.id = $1`,
        [id],
      )
    ).rows[0];
  /** Starts each [id, key] in turn. */
  const started = async (e: WeftEngine, ids: Array<[string, string]>) => {
    for (const [workflowId, partitionKey] of ids) await e.start('gated', {}, { workflowId, queue: 'p', partitionKey });
  };

  it("takes the next key with room after the cursor, skipping a key at its limit and the ending run's own key", async () => {
    const e = await env.pool.create(slow, (x) => x.register('gated', Gated));
    await e.bootstrap();
    // c1 first (the cursor: c), then a1 and b1 (the walk wraps: a, b; the cursor: b).
    await started(e, [['c1', 'c']]);
    await waitFor(() => began.has('c1'), 'c1 to run');
    await started(e, [
      ['a1', 'a'],
      ['b1', 'b'],
    ]);
    await waitFor(() => began.has('a1') && began.has('b1'), 'a1 and b1 to run');
    expect((await sql.query(`SELECT partition_cursor FROM weft.weft_queues WHERE name = 'p'`)).rows[0].partition_cursor).toBe('b');
    // The queue is full (3 running): these wait. A full pass makes the backlog known to the engine.
    await started(e, [
      ['c2', 'c'],
      ['d1', 'd'],
      ['a2', 'a'],
    ]);
    await e.runMaintenance();
    expect(await statuses(['c2', 'd1', 'a2'])).toEqual({ c2: 'enqueued', d1: 'enqueued', a2: 'enqueued' });
    // a1's end frees a slot of a. After the cursor (b): c is at its limit (c1 runs), d has room.
    // Ignoring the cursor (or a swap inside the ending key) would take a2; ignoring the limit, c2.
    release('a1');
    await waitFor(() => began.has('d1'), 'd1 to run', 15_000);
    expect(await statuses(['a1', 'c2', 'd1', 'a2'])).toEqual({ a1: 'completed', c2: 'enqueued', d1: 'running', a2: 'enqueued' });
    // Admitted (and claimed) by a1's end commit: the same transaction.
    const [ended, admitted] = [await xmins('a1'), await xmins('d1')];
    expect(admitted.row).toBe(ended.row);
    expect(admitted.claim).toBe(ended.row);
    expect((await sql.query(`SELECT partition_cursor FROM weft.weft_queues WHERE name = 'p'`)).rows[0].partition_cursor).toBe('d');
    for (const id of ['b1', 'c1', 'd1']) release(id);
    await waitFor(() => began.has('c2') && began.has('a2'), 'the rest to run', 15_000);
    for (const id of ['c2', 'a2']) release(id);
    await waitFor(async () => Object.values(await statuses(['c2', 'a2'])).every((s) => s === 'completed'), 'the rest to end');
  });

  it('an end that finds the queue locked leaves its slot to a pass, which admits once the lock is gone', async () => {
    const e = await env.pool.create(slow, (x) => x.register('gated', Gated));
    await e.bootstrap();
    await started(e, [
      ['x1', 'x'],
      ['y1', 'y'],
      ['z1', 'z'],
    ]);
    await waitFor(() => ['x1', 'y1', 'z1'].every((id) => began.has(id)), 'x1, y1, z1 to run');
    await started(e, [['w1', 'w']]);
    await e.runMaintenance();
    // Another admission holds the queue's row: the end commit does not wait for it.
    const locker = new pg.Client({ connectionString: env.tdb.url });
    locker.on('error', () => undefined);
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query(`SELECT 1 FROM weft.weft_queues WHERE name = 'p' FOR UPDATE`);
      release('x1');
      await waitFor(async () => (await statuses(['x1'])).x1 === 'completed', 'x1 to end');
      expect((await statuses(['w1'])).w1).toBe('enqueued');
      await locker.query('COMMIT');
    } finally {
      await locker.end();
    }
    // The pass x1's end nudged waited for the lock; it admits w1 now, in a transaction of its own.
    await waitFor(() => began.has('w1'), 'w1 to run', 15_000);
    expect((await xmins('w1')).claim).not.toBe((await xmins('x1')).row);
    for (const id of ['y1', 'z1', 'w1']) release(id);
    await waitFor(async () => Object.values(await statuses(['y1', 'z1', 'w1'])).every((s) => s === 'completed'), 'the rest to end');
  });
});
