// A queued run's end hands its slot on in its end commit, and tells the other engines when it
// freed one with work left (docs/decisions/0042). The engines poll every 60 s here: whatever runs
// within the tests' deadlines was admitted by an end, not by the poll.
import pg from 'pg';
import { heldWorkflow, useTestEngines, waitFor } from '../../../../../test/support/engine.js';
import type { WorkflowContext } from '../../common/types.js';

const ran: string[] = [];
class Recorder {
  async run(ctx: WorkflowContext) {
    await ctx.step('record', () => void ran.push(ctx.workflowId));
  }
}

const held = heldWorkflow();

const queues = { q: { concurrency: 1 } };
const slow = { timerPollInterval: '60s', ownership: 'workflow-lease', queues } as const;

describe('queue hand-off and cross-engine wake (real PostgreSQL)', () => {
  const env = useTestEngines();
  let sql: pg.Client;
  beforeAll(async () => {
    sql = new pg.Client({ connectionString: env.tdb.url });
    sql.on('error', () => undefined);
    await sql.connect();
  });
  afterAll(() => sql.end());
  beforeEach(() => {
    ran.length = 0;
    held.began = false;
  });

  it('an end admits the next enqueued workflow in its own commit, without waiting for the poll', async () => {
    const a = await env.pool.create(slow, (e) => e.register('held', held.Held).register('rec', Recorder));
    // A starter that never admits (manual): this engine learns of the backlog from no start of its own.
    const starter = await env.pool.create({ ...slow, backgroundTasks: 'manual' }, (e) => e.register('rec', Recorder));
    await a.bootstrap();
    await starter.bootstrap();
    await a.start('held', {}, { workflowId: 'x', queue: 'q' });
    await waitFor(() => held.began, 'x to run');
    for (const id of ['y1', 'y2', 'y3']) await starter.start('rec', {}, { workflowId: id, queue: 'q' });
    held.release();
    await waitFor(() => ran.length === 3, 'the enqueued runs', 15_000);
    expect(ran).toEqual(['y1', 'y2', 'y3']);
    // y2 and y3 were admitted (and claimed) by the commit that ended the run before them: the same transaction.
    const { rows } = await sql.query<{ id: string; ended: string; claimed: string }>(
      `SELECT w.id, w.xmin::text AS ended, c.xmin::text AS claimed FROM weft.weft_workflows w
       JOIN weft.weft_workflow_claims c ON c.workflow_id = w.id WHERE w.id IN ('y1', 'y2', 'y3') ORDER BY w.id`,
    );
    expect(rows[1].claimed).toBe(rows[0].ended);
    expect(rows[2].claimed).toBe(rows[1].ended);
  });

  it("an admitted run's end deletes its deadline's timer, and one without a deadline has none to delete", async () => {
    const a = await env.pool.create(slow, (e) => e.register('held', held.Held).register('rec', Recorder));
    await a.bootstrap();
    await a.start('held', {}, { workflowId: 'x5', queue: 'q' });
    await waitFor(() => held.began, 'x5 to run');
    // Admitted by a pass (t1, mostly) or handed off by the end before (t2, t3): either says whether
    // timer rows may exist (the deadline's), and the run's end deletes them.
    for (const [id, deadline] of [
      ['t1', true],
      ['t2', false],
      ['t3', true],
    ] as const)
      await a.start('rec', {}, { workflowId: id, queue: 'q', ...(deadline ? { executionTimeout: '1h' } : {}) });
    const timers = async () =>
      (await sql.query<{ id: string }>(`SELECT workflow_id AS id FROM weft.weft_timers WHERE workflow_id LIKE 't_' ORDER BY 1`)).rows;
    expect(await timers()).toEqual([{ id: 't1' }, { id: 't3' }]);
    held.release();
    await waitFor(async () => (await a.describe('t3')).status === 'completed', 't3 to complete', 15_000);
    expect(await timers()).toEqual([]);
  });

  it('a slot freed on one engine wakes another engine that can run the waiting work', async () => {
    const a = await env.pool.create(slow, (e) => e.register('held', held.Held));
    const b = await env.pool.create(slow, (e) => e.register('rec', Recorder));
    await a.bootstrap();
    await b.bootstrap();
    await a.start('held', {}, { workflowId: 'x2', queue: 'q' });
    await waitFor(() => held.began, 'x2 to run on a');
    // b's own pass finds no room (x2 holds the queue's one slot): it waits.
    await b.start('rec', {}, { workflowId: 'y', queue: 'q' });
    expect((await b.describe('y')).status).toBe('enqueued');
    held.release();
    await waitFor(() => ran.includes('y'), 'y to run on b', 15_000);
    await waitFor(async () => (await b.describe('y')).status === 'completed', 'y to complete');
  });

  it('an end that knew of the backlog but runs none of its types announces the freed slot from its commit', async () => {
    const a = await env.pool.create(slow, (e) => e.register('held', held.Held));
    const starter = await env.pool.create({ ...slow, backgroundTasks: 'manual' }, (e) => e.register('rec', Recorder));
    await a.bootstrap();
    await starter.bootstrap();
    await starter.start('rec', {}, { workflowId: 'z1', queue: 'q' });
    // a admits its own type past z1 and learns that work is left.
    await a.start('held', {}, { workflowId: 'x4', queue: 'q' });
    await waitFor(() => held.began, 'x4 to run on a');
    const b = await env.pool.create(slow, (e) => e.register('rec', Recorder));
    await b.bootstrap();
    expect((await b.describe('z1')).status).toBe('enqueued');
    held.release();
    await waitFor(() => ran.includes('z1'), 'z1 to run on b', 15_000);
  });
});
