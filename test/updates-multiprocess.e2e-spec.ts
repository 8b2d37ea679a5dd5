import { CommandClient } from './fixtures/command-client.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { EngineProcesses, fixture, WORKFLOW_LEASE_ENGINE } from './support/processes.js';

/**
 * updateWithStart (docs/messages.md) racing a plain start of the same workflow id, from two engine
 * PROCESSES under ownership 'workflow-lease': whichever start lands first, there is one workflow,
 * one run, the update is applied once (one recorded delivery, one step), after run() reached its
 * first wait, and its caller gets the handler's result. Engines are test/fixtures/engine-child.ts
 * processes; the workflow is `booking` in test/fixtures/message-workflows.ts.
 */
describe('updateWithStart racing a plain start across engine processes', () => {
  let tdb: TestDatabase;
  const procs = new EngineProcesses(fixture('engine-child'), () => ({ DATABASE_URL: tdb.url, ...WORKFLOW_LEASE_ENGINE }));
  let A: CommandClient;
  let B: CommandClient;

  const engine = async (id: string): Promise<CommandClient> =>
    new CommandClient((await procs.ready(id, { MESSAGE_TYPES: 'booking' })).proc, id);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    [A, B] = await Promise.all([engine('A'), engine('B')]);
  }, 60_000);
  afterAll(async () => {
    await procs.killAll();
    await tdb?.drop();
  });

  it('one workflow, one run, the update applied once after run() reached its first wait, whichever start wins', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `booking-${i}`);
    const outcomes = await Promise.all(
      ids.map(async (workflowId, i) => {
        // Half the time the plain start is sent first, half the time the update-with-start.
        const uws = () =>
          A.call<{ opened: boolean; reserved: number; stepOn: string }>(
            'updateWithStart',
            { type: 'booking', input: { label: workflowId }, opts: { workflowId }, name: 'reserve', args: i, timeout: 30_000 },
            40_000,
          );
        const plain = () =>
          B.call<{ workflowId: string }>('start', { type: 'booking', input: { label: workflowId }, opts: { workflowId } });
        const [updated, started] = i % 2 === 0 ? await Promise.all([uws(), plain()]) : (await Promise.all([plain(), uws()])).reverse();
        return { workflowId, updated: updated as { opened: boolean; reserved: number; stepOn: string }, started };
      }),
    );
    for (const { workflowId, updated, started } of outcomes) {
      expect(started).toEqual({ workflowId });
      expect(updated).toMatchObject({ opened: true, reserved: 1 });
      expect(['A', 'B']).toContain(updated.stepOn);
    }
    const rows = await tdb.query<{ id: string; run_number: number }>(
      `SELECT id, run_number FROM weft.weft_workflows WHERE id LIKE 'booking-%' ORDER BY id`,
    );
    expect(rows).toEqual(ids.map((id) => ({ id, run_number: 1 })));
    const updates = await tdb.query<{ workflow_id: string; status: string }>(
      `SELECT workflow_id, status FROM weft.weft_messages WHERE kind = 'update' ORDER BY workflow_id`,
    );
    expect(updates).toEqual(ids.map((workflow_id) => ({ workflow_id, status: 'done' })));
    for (const workflowId of ids) {
      const ops = await tdb.query<{ kind: string; name: string }>(
        `SELECT kind, name FROM weft.weft_operations WHERE workflow_id = $1 ORDER BY seq`,
        [workflowId],
      );
      // run()'s first step, then the update (at run()'s first wait) and its one step.
      expect(ops).toEqual([
        { kind: 'step', name: 'open' },
        { kind: 'update', name: 'reserve' },
        { kind: 'step', name: 'reserve' },
      ]);
    }
    await Promise.all(ids.map((workflowId) => B.call('signal', { workflowId, name: 'close', payload: null })));
    for (const [i, workflowId] of ids.entries()) {
      const out = await waitFor(
        () => A.call<{ reserved: number[] }>('result', { workflowId, timeout: 20_000 }, 30_000),
        `${workflowId} to complete`,
        40_000,
      );
      expect(out.reserved).toEqual([i]);
    }
  }, 120_000);
});
