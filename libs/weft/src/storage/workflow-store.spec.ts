import { useTestStore } from '../../../../test/support/store.js';
import { WorkflowVersionConflictError } from '../common/errors.js';

describe('WorkflowStore versioned commits (real PostgreSQL)', () => {
  const env = useTestStore();

  const start = (id: string) =>
    env.store.workflows.start({
      id,
      type: 't',
      status: 'running',
      input: { n: 1 },
      parentId: null,
      deadlineInMs: null,
      startInMs: null,
      timers: [],
    });

  it('inserts once and reports the existing row on a second insert', async () => {
    const first = await start('dup-1');
    const second = await start('dup-1');
    expect(first).toEqual({ inserted: true, status: 'running', version: 1, claimEpoch: null, signalId: null });
    expect(second).toEqual({ inserted: false, status: 'running', version: 1, claimEpoch: null, signalId: null });
  });

  const row = (id: string, timers: Array<{ kind: 'delayed-start' | 'execution-deadline'; delayMs: number }> = []) => ({
    id,
    type: 't',
    status: 'running' as const,
    input: { id },
    parentId: null,
    deadlineInMs: timers.length ? 60_000 : null,
    startInMs: null,
    timers,
  });

  it('starts many workflows in one statement, results in request order, existing ids reported', async () => {
    await start('many-existing');
    const ws = [row('many-b'), row('many-existing'), row('many-a', [{ kind: 'execution-deadline', delayMs: 60_000 }])];
    const out = await env.store.workflows.startMany(ws);
    expect(out).toEqual([
      { inserted: true, status: 'running', version: 1, claimEpoch: null, signalId: null },
      { inserted: false, status: 'running', version: 1, claimEpoch: null, signalId: null },
      { inserted: true, status: 'running', version: 1, claimEpoch: null, signalId: null },
    ]);
    const rows = await env.tdb.query<{ id: string; input: { id: string }; deadline: Date | null }>(
      `SELECT id, input, deadline FROM weft.weft_workflows WHERE id IN ('many-a', 'many-b') ORDER BY id`,
    );
    expect(rows.map((r) => [r.id, r.input.id, r.deadline !== null])).toEqual([
      ['many-a', 'many-a', true],
      ['many-b', 'many-b', false],
    ]);
    const timers = await env.tdb.query(`SELECT kind FROM weft.weft_timers WHERE workflow_id = 'many-a'`);
    expect(timers).toEqual([{ kind: 'execution-deadline' }]);
  });

  it('takes the claim and stores a start signal in the start statement itself', async () => {
    const claimer = { engineId: 'E1', ttlMs: 5000, graceMs: 1000 };
    const [mine, free] = await env.store.workflows.startMany(
      [
        { ...row('claimed-1'), claim: 'mine' as const, signal: { name: 'go', payload: { n: 1 } } },
        { ...row('claimed-free'), claim: 'free' as const },
      ],
      claimer,
    );
    expect(mine).toMatchObject({ inserted: true, claimEpoch: '1' });
    expect(mine.signalId).toMatch(/^\d+$/);
    expect(free).toMatchObject({ inserted: true, claimEpoch: null, signalId: null });
    const claims = await env.tdb.query<{ workflow_id: string; engine_id: string | null; epoch: string }>(
      `SELECT workflow_id, engine_id, epoch::text AS epoch FROM weft.weft_workflow_claims WHERE workflow_id LIKE 'claimed-%' ORDER BY 1`,
    );
    expect(claims).toEqual([
      { workflow_id: 'claimed-1', engine_id: 'E1', epoch: '1' },
      { workflow_id: 'claimed-free', engine_id: null, epoch: '0' },
    ]);
    const msgs = await env.tdb.query(`SELECT kind, name, payload FROM weft.weft_messages WHERE workflow_id = 'claimed-1'`);
    expect(msgs).toEqual([{ kind: 'signal', name: 'go', payload: { n: 1 } }]);
  });

  it('overlapping batches from racing engines: no deadlock, every id inserted exactly once', async () => {
    const ids = Array.from({ length: 3000 }, (_, i) => `overlap-${String(i).padStart(4, '0')}`);
    // Half the batches in ascending order, half descending: unordered inserts would deadlock.
    const batches = Array.from({ length: 8 }, (_, b) => {
      const mine = ids.filter((_, i) => (i + b) % 3 !== 0);
      return (b % 2 ? mine.reverse() : mine).map((id) => row(id));
    });
    const results = await Promise.all(batches.map((ws) => env.store.workflows.startMany(ws)));
    const insertedBy = new Map<string, number>();
    results.forEach((out, b) =>
      out.forEach((r, i) => r.inserted && insertedBy.set(batches[b][i].id, (insertedBy.get(batches[b][i].id) ?? 0) + 1)),
    );
    expect([...insertedBy.keys()].sort()).toEqual(ids);
    expect([...insertedBy.values()].every((n) => n === 1)).toBe(true);
    for (const out of results) for (const r of out) expect(r).toMatchObject({ status: 'running', version: 1 });
  });

  it('50 racing pairs: exactly one advance of each pair wins and the loser writes nothing', async () => {
    const ids = Array.from({ length: 50 }, (_, i) => `race-${i}`);
    await Promise.all(ids.map(start));
    const attempt = (id: string, who: 'a' | 'b') =>
      env.store.workflows
        .advance({
          workflowId: id,
          expectedVersion: 1,
          operations: [{ seq: 0, kind: 'step', name: `by-${who}`, status: 'completed', result: who }],
          timers: [{ kind: 'sleep', seq: who === 'a' ? 1 : 2, delayMs: 60_000 }],
          messages: [{ workflowId: id, kind: 'signal', name: `from-${who}`, payload: null }],
        })
        .then(
          (version) => ({ who, version }),
          (err: unknown) => ({ who, err }),
        );
    const results = await Promise.all(ids.map((id) => Promise.all([attempt(id, 'a'), attempt(id, 'b')])));

    for (const [i, pair] of results.entries()) {
      const winners = pair.filter((r) => 'version' in r);
      const losers = pair.filter((r) => 'err' in r);
      expect(winners).toHaveLength(1);
      expect(losers).toHaveLength(1);
      expect((losers[0] as { err: unknown }).err).toBeInstanceOf(WorkflowVersionConflictError);
      const win = winners[0].who;
      const lose = losers[0].who;
      const id = ids[i];
      const ops = await env.db.sql.query<{ name: string }>(`SELECT name FROM weft.weft_operations WHERE workflow_id = $1`, [id]);
      expect(ops.map((o) => o.name)).toEqual([`by-${win}`]);
      const timers = await env.db.sql.query<{ seq: number }>(`SELECT seq FROM weft.weft_timers WHERE workflow_id = $1`, [id]);
      expect(timers.map((t) => t.seq)).toEqual([win === 'a' ? 1 : 2]);
      const msgs = await env.db.sql.query<{ name: string }>(`SELECT name FROM weft.weft_messages WHERE workflow_id = $1`, [id]);
      expect(msgs.map((m) => m.name)).toEqual([`from-${win}`]);
      expect(msgs.map((m) => m.name)).not.toContain(`from-${lose}`);
      const row = await env.store.workflows.get(id);
      expect(row?.version).toBe(2);
    }
  });

  it('group commit keeps each workflow version check independent', async () => {
    await Promise.all(['g-1', 'g-2', 'g-3'].map(start));
    const out = await env.store.workflows.advanceMany([
      { workflowId: 'g-1', expectedVersion: 1, status: 'completed', output: { value: 1 }, completed: true },
      { workflowId: 'g-2', expectedVersion: 7, status: 'completed', output: { value: 2 } },
      { workflowId: 'g-3', expectedVersion: 1, operations: [{ seq: 0, kind: 'step', name: 's', status: 'completed', result: 3 }] },
    ]);
    expect(out.map((o) => o.ok)).toEqual([true, false, true]);
    expect((await env.store.workflows.get('g-1'))?.status).toBe('completed');
    expect((await env.store.workflows.get('g-2'))?.status).toBe('running');
    expect(await env.store.operations.history('g-3')).toEqual([expect.objectContaining({ seq: 0, name: 's', result: 3 })]);
  });

  it('a fenced advance is refused unless it carries the epoch its claim was handed over at (the fence_epoch of the row)', async () => {
    await start('f-1');
    // A handover writes the claim row and the workflow row's fence_epoch in one statement.
    await env.db.sql.query(
      `WITH c AS (INSERT INTO weft.weft_workflow_claims (workflow_id, epoch, engine_id) VALUES ('f-1', 3, 'e1') RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
    );
    const refused = await env.store.workflows.advanceMany([
      { workflowId: 'f-1', expectedVersion: 1, status: 'completed', fence: { engineId: 'e1', epoch: '2' } },
    ]);
    expect(refused[0]).toEqual({ workflowId: 'f-1', ok: false, reason: 'fence' });
    const accepted = await env.store.workflows.advanceMany([
      { workflowId: 'f-1', expectedVersion: 1, status: 'completed', fence: { engineId: 'e1', epoch: '3' } },
    ]);
    expect(accepted[0]).toEqual({ workflowId: 'f-1', ok: true, version: 2 });
  });
});
