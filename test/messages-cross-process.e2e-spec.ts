import { CommandClient } from './fixtures/command-client.js';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { Child, EngineProcesses, fixture, WORKFLOW_LEASE_ENGINE } from './support/processes.js';

/**
 * Messages (docs/messages.md) across engine PROCESSES under ownership 'workflow-lease' (short claim
 * TTL): signals, updates, queries and child completions sent through one engine reach the
 * workflow where another engine owns it. Engines are test/fixtures/engine-child.ts processes
 * driven through their stdin command channel; workflows are in test/fixtures/message-workflows.ts,
 * whose handlers print a "delivered" event (with the engine's id) for every live delivery.
 */
describe('messages across engine processes (workflow-lease)', () => {
  let tdb: TestDatabase;
  const procs = new EngineProcesses(fixture('engine-child'), () => ({ DATABASE_URL: tdb.url, ...WORKFLOW_LEASE_ENGINE }));

  interface Engine {
    id: string;
    child: Child;
    cmd: CommandClient;
  }
  let A: Engine;
  let B: Engine;

  /** Ready engine process `id` that registers exactly `types` of the message workflows. */
  const engine = async (id: string, types: string): Promise<Engine> => {
    const child = await procs.ready(id, { MESSAGE_TYPES: types });
    return { id, child, cmd: new CommandClient(child.proc, id) };
  };

  /** The claim's holder while it holds it: the row names it and is the workflow's fence (docs/decisions/0011). */
  const claim = async (workflowId: string) =>
    (
      await tdb.query<{ engine_id: string | null; epoch: string }>(
        `SELECT CASE WHEN w.fence_epoch = c.epoch THEN c.engine_id END AS engine_id, c.epoch::text AS epoch
         FROM weft.weft_workflow_claims c LEFT JOIN weft.weft_workflows w ON w.id = c.workflow_id WHERE c.workflow_id = $1`,
        [workflowId],
      )
    )[0];
  const delivered = (e: Engine, workflowId: string) =>
    e.child.events.filter((x) => x.event === 'delivered' && x.workflowId === workflowId).map((x) => `${x.kind}:${x.name}:${x.payload}`);
  /**
   * Every live delivery `e` printed for a workflow, once it has printed at least `n` (its stdout
   * can trail a reply that came through another process's pipe).
   */
  const deliveredOn = (e: Engine, workflowId: string, n: number) =>
    waitFor(() => delivered(e, workflowId).length >= n && delivered(e, workflowId), `${n} deliveries printed by ${e.id}`);
  interface Op {
    seq: number;
    kind: string;
    name: string;
    result: unknown;
  }
  const history = async (via: Engine, workflowId: string) =>
    (await via.cmd.call<{ history: Op[] }>('describe', { workflowId })).history.map((o) => ({
      seq: o.seq,
      kind: o.kind,
      name: o.name,
      result: o.result,
    }));
  /** Waits until the owner has made `n` handler deliveries durable (recorded in the history). */
  // At least n, then exactly n: a delivery recorded twice fails here with the history, not as a timeout.
  const deliveriesRecorded = async (via: Engine, workflowId: string, n: number) => {
    const deliveries = async () => (await history(via, workflowId)).filter((o) => o.kind === 'signal' || o.kind === 'update');
    await waitFor(async () => (await deliveries()).length >= n, `${n} deliveries recorded for ${workflowId}`, 30_000);
    expect((await deliveries()).map((o) => `${o.kind}:${o.name}`)).toHaveLength(n);
  };
  const started = (via: Engine, workflowId: string) =>
    waitFor(async () => (await history(via, workflowId)).some((o) => o.name === 'open'), `${workflowId} past its first step`);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    // A runs parents and tallies; B runs tallies and children, and is the only other engine that
    // registers 'tally-handoff' (so it, and nobody else, takes such a workflow over).
    [A, B] = await Promise.all([engine('A', 'tally,remote-parent,remote-child'), engine('B', 'tally,tally-handoff,remote-child')]);
  }, 60_000);
  afterAll(async () => {
    await procs.killAll();
    await tdb?.drop();
  });

  it('a signal sent through B runs its handler on A, which owns the parked workflow', async () => {
    const id = 'sig-1';
    await A.cmd.call('start', { type: 'tally', input: { label: 'fruit' }, opts: { workflowId: id } });
    await started(A, id);
    const owner = await claim(id);
    expect(owner.engine_id).toBe('A');

    await B.cmd.call('signal', { workflowId: id, name: 'add', payload: 'apple' });
    await B.cmd.call('signal', { workflowId: id, name: 'add', payload: 'kiwi' });
    expect(await deliveredOn(A, id, 2)).toEqual(['signal:add:apple', 'signal:add:kiwi']);
    expect(delivered(B, id)).toEqual([]);
    // A answers from its live instance: the handlers mutated it, in arrival order.
    expect(await A.cmd.call('query', { workflowId: id, name: 'state' })).toEqual({ items: ['apple', 'kiwi'], total: 9, closed: false });

    await B.cmd.call('signal', { workflowId: id, name: 'close', payload: 'done' });
    expect(await B.cmd.call('result', { workflowId: id })).toEqual({ label: 'fruit', items: ['apple', 'kiwi'], total: 9 });
    expect(await deliveredOn(A, id, 3)).toEqual(['signal:add:apple', 'signal:add:kiwi', 'signal:close:done']);
    expect(delivered(B, id)).toEqual([]);
    // A kept the workflow throughout (signals never rotate the epoch) and released it at the end.
    expect(await claim(id)).toEqual({ engine_id: null, epoch: owner.epoch });
    const messages = await tdb.query<{ name: string; consumed: boolean }>(
      `SELECT name, consumed_seq IS NOT NULL AS consumed FROM weft.weft_messages WHERE workflow_id = $1 ORDER BY id`,
      [id],
    );
    expect(messages).toEqual(['add', 'add', 'close'].map((name) => ({ name, consumed: true })));
  });

  it("an update sent through B resolves with A's handler value; B never owns the workflow", async () => {
    const id = 'upd-1';
    await A.cmd.call('start', { type: 'tally', input: {}, opts: { workflowId: id } });
    await started(A, id);
    const owner = await claim(id);
    expect(owner.engine_id).toBe('A');
    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'pear' });

    expect(await B.cmd.call('update', { workflowId: id, name: 'bump', args: 7 })).toEqual({ total: 11, items: 1, handledBy: 'A' });
    expect(await B.cmd.call('update', { workflowId: id, name: 'bump', args: 5 })).toEqual({ total: 16, items: 1, handledBy: 'A' });
    // A throwing handler on A is a typed error at B, and the workflow goes on.
    await expect(B.cmd.call('update', { workflowId: id, name: 'bump', args: 'x' })).rejects.toMatchObject({ code: 'WEFT_UPDATE_FAILED' });
    expect(await deliveredOn(A, id, 4)).toEqual(['signal:add:pear', 'update:bump:7', 'update:bump:5', 'update:bump:x']);
    expect(delivered(B, id)).toEqual([]);
    expect(await claim(id)).toEqual({ engine_id: 'A', epoch: owner.epoch });
    const rows = await tdb.query<{ status: string; result: unknown }>(
      `SELECT status, result FROM weft.weft_messages WHERE workflow_id = $1 AND kind = 'update' ORDER BY id`,
      [id],
    );
    expect(rows.map((r) => r.status)).toEqual(['done', 'done', 'failed']);
    expect(rows[0].result).toEqual({ value: { total: 11, items: 1, handledBy: 'A' } });

    await A.cmd.call('signal', { workflowId: id, name: 'close', payload: 'ok' });
    expect(await A.cmd.call('result', { workflowId: id })).toEqual({ label: 'tally', items: ['pear'], total: 16 });
  });

  it('a query through B (a replay there) returns the same state as through A (its live instance)', async () => {
    const id = 'qry-1';
    await A.cmd.call('start', { type: 'tally', input: {}, opts: { workflowId: id } });
    await started(A, id);
    await B.cmd.call('signal', { workflowId: id, name: 'add', payload: 'fig' });
    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'plum' });
    await B.cmd.call('update', { workflowId: id, name: 'bump', args: 100 });
    await B.cmd.call('signal', { workflowId: id, name: 'add', payload: 'lime' });
    await deliveriesRecorded(A, id, 4);

    const expected = { items: ['fig', 'plum', 'lime'], total: 111, closed: false };
    expect(await A.cmd.call('query', { workflowId: id, name: 'state' })).toEqual(expected);
    expect(await B.cmd.call('query', { workflowId: id, name: 'state' })).toEqual(expected);
    expect((await claim(id)).engine_id).toBe('A'); // the query did not move it
    await expect(B.cmd.call('query', { workflowId: id, name: 'nope' })).rejects.toMatchObject({ code: 'WEFT_UNKNOWN_HANDLER' });
    await B.cmd.call('signal', { workflowId: id, name: 'close', payload: 'x' });
    await expect(B.cmd.call('result', { workflowId: id })).resolves.toEqual({ label: 'tally', items: expected.items, total: 111 });
  });

  it("a parent on A awaits a child that runs on B and gets the child's result", async () => {
    const parentId = 'family-1';
    const childId = 'family-1/kid';
    await A.cmd.call('start', {
      type: 'remote-parent',
      input: { childType: 'remote-child', childInput: { hold: true, value: 21 }, childId },
      opts: { workflowId: parentId },
    });
    const parentClaim = await claim(parentId);
    expect(parentClaim.engine_id).toBe('A');
    // A starts the child (and holds it); the child parks before running anything.
    await waitFor(async () => (await claim(childId))?.engine_id === 'A', 'A holds the child');
    // B takes the child: suspend rotates the epoch (deposing A's run), resume claims it for B and drives it there.
    await B.cmd.call('suspend', { workflowId: childId });
    await B.cmd.call('resume', { workflowId: childId });
    expect((await claim(childId)).engine_id).toBe('B');

    await A.cmd.call('signal', { workflowId: childId, name: 'release', payload: 'go' });
    expect(await B.cmd.call('result', { workflowId: parentId, timeout: 15_000 })).toEqual({ child: { ranOn: 'B', value: 42 } });
    expect(await deliveredOn(B, childId, 1)).toEqual(['signal:release:go']);
    expect(delivered(A, childId)).toEqual([]);
    expect((await history(B, childId)).find((o) => o.name === 'where')?.result).toBe('B');
    const parentOps = (await history(A, parentId)).map((o) => `${o.kind}:${o.name}`);
    expect(parentOps).toEqual(['startChild:remote-child', `childResult:${childId}`]);
    // The parent stayed on A at one epoch: the child's completion reached it as a message.
    expect(await claim(parentId)).toEqual({ engine_id: null, epoch: parentClaim.epoch });
  });

  // A child type that only another engine runs: stored unclaimed, picked up by that engine's reclaim scan.
  it("a parent on P starts a child whose type only B registers, and gets the child's result", async () => {
    const P = await engine('P', 'remote-parent'); // runs parents only
    const parentId = 'family-2';
    await P.cmd.call('start', {
      type: 'remote-parent',
      input: { childType: 'remote-child', childInput: { value: 5 } },
      opts: { workflowId: parentId },
    });
    try {
      // Today the parent ends at once with { failed: 'WEFT_WORKFLOW_TYPE_NOT_REGISTERED' }.
      expect(await P.cmd.call('result', { workflowId: parentId, timeout: 15_000 })).toEqual({
        child: { ranOn: expect.any(String), value: 10 },
      });
    } finally {
      await procs.kill(P.child); // later tests rely on A being the only other engine that runs parents
    }
  });

  it('messages sent while the owner is dead wait durably: the engine that takes over applies them', async () => {
    const W = await engine('W', 'tally-handoff');
    const id = 'kill-2';
    await W.cmd.call('start', { type: 'tally-handoff', input: { label: 'orphan' }, opts: { workflowId: id } });
    await started(W, id);
    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'pre' });
    await deliveriesRecorded(A, id, 1);
    await procs.kill(W.child);
    // Nobody owns it now: the signal is stored, the update waits for an owner.
    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'while-dead' });
    const update = A.cmd.call('update', { workflowId: id, name: 'bump', args: 2, timeout: 15_000 }, 20_000);
    expect(await update).toEqual({ total: 15, items: 2, handledBy: 'B' });
    expect((await claim(id)).engine_id).toBe('B');
    expect(await deliveredOn(B, id, 2)).toEqual(['signal:add:while-dead', 'update:bump:2']);
    await A.cmd.call('signal', { workflowId: id, name: 'close', payload: 'end' });
    expect(await A.cmd.call('result', { workflowId: id })).toEqual({ label: 'orphan', items: ['pre', 'while-dead'], total: 15 });
  });

  it("a child's completion reaches its parent while the parent's owner is dead, through the engine that takes the parent over", async () => {
    const X = await engine('X', 'remote-parent,remote-child');
    const parentId = 'family-3';
    const childId = 'family-3/kid';
    await X.cmd.call('start', {
      type: 'remote-parent',
      input: { childType: 'remote-child', childInput: { hold: true, value: 4 }, childId },
      opts: { workflowId: parentId },
    });
    await waitFor(async () => (await claim(childId))?.engine_id === 'X', 'X holds the child');
    await B.cmd.call('suspend', { workflowId: childId });
    await B.cmd.call('resume', { workflowId: childId });
    const parentClaim = await claim(parentId);
    expect(parentClaim.engine_id).toBe('X');
    await procs.kill(X.child);
    // The child finishes on B while nobody drives the parent: its notice waits in the parent's inbox.
    await B.cmd.call('signal', { workflowId: childId, name: 'release', payload: 'now' });
    expect(await B.cmd.call('result', { workflowId: childId })).toEqual({ ranOn: 'B', value: 8 });
    expect((await claim(parentId)).engine_id).toBe('X');
    // A is the only live engine that registers 'remote-parent': it takes the parent over and finishes it.
    expect(await B.cmd.call('result', { workflowId: parentId, timeout: 15_000 })).toEqual({ child: { ranOn: 'B', value: 8 } });
    expect(await claim(parentId)).toEqual({ engine_id: null, epoch: String(BigInt(parentClaim.epoch) + 1n) }); // one takeover
    expect((await history(A, parentId)).map((o) => `${o.kind}:${o.name}`)).toEqual(['startChild:remote-child', `childResult:${childId}`]);
  });

  it('handler deliveries replay identically after SIGKILL of the owner: B takes over with exactly its state', async () => {
    // V is the only engine besides B that registers 'tally-handoff'; A sends it messages.
    const V = await engine('V', 'tally-handoff');
    const id = 'kill-1';
    await V.cmd.call('start', { type: 'tally-handoff', input: { label: 'handoff' }, opts: { workflowId: id } });
    await started(V, id);
    const before = await claim(id);
    expect(before.engine_id).toBe('V');
    for (const item of ['one', 'two', 'three']) await A.cmd.call('signal', { workflowId: id, name: 'add', payload: item });
    expect(await A.cmd.call('update', { workflowId: id, name: 'bump', args: 10 })).toEqual({ total: 21, items: 3, handledBy: 'V' });
    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'four' });
    await deliveriesRecorded(B, id, 5);
    expect(await deliveredOn(V, id, 5)).toEqual([
      'signal:add:one',
      'signal:add:two',
      'signal:add:three',
      'update:bump:10',
      'signal:add:four',
    ]);
    const atKill = await V.cmd.call('query', { workflowId: id, name: 'state' });
    expect(atKill).toEqual({ items: ['one', 'two', 'three', 'four'], total: 25, closed: false });
    const historyAtKill = await history(B, id);

    await procs.kill(V.child);
    // B takes it over once the claim is past TTL + grace (1.5 s + 2 × 0.5 s), on its reclaim scan.
    await waitFor(async () => (await claim(id)).engine_id === 'B', 'B takes the workflow over', 15_000, 50);
    expect(BigInt((await claim(id)).epoch)).toBe(BigInt(before.epoch) + 1n);
    await waitFor(async () => (await B.cmd.call<{ liveWorkflows: number }>('health')).liveWorkflows > 0, 'B drives it');
    // B replayed the recorded deliveries into a fresh instance: exactly V's state, nothing re-delivered.
    expect(await B.cmd.call('query', { workflowId: id, name: 'state' })).toEqual(atKill);
    expect(delivered(B, id)).toEqual([]);
    expect(await history(B, id)).toEqual(historyAtKill);

    await A.cmd.call('signal', { workflowId: id, name: 'add', payload: 'five' });
    expect(await A.cmd.call('update', { workflowId: id, name: 'bump', args: 1 })).toEqual({ total: 30, items: 5, handledBy: 'B' });
    await A.cmd.call('signal', { workflowId: id, name: 'close', payload: 'end' });
    expect(await A.cmd.call('result', { workflowId: id })).toEqual({
      label: 'handoff',
      items: ['one', 'two', 'three', 'four', 'five'],
      total: 30,
    });
    expect(await deliveredOn(B, id, 3)).toEqual(['signal:add:five', 'update:bump:1', 'signal:close:end']);
    // Every delivery is recorded once, in arrival order, and nothing recorded before the kill was rewritten.
    const final = await history(A, id);
    for (const op of historyAtKill) expect(final.find((o) => o.seq === op.seq)).toEqual(op);
    const deliveries = final.filter((o) => o.kind === 'signal' || o.kind === 'update').map((o) => `${o.kind}:${o.name}`);
    expect(deliveries).toEqual([
      ...['signal:add', 'signal:add', 'signal:add', 'update:bump', 'signal:add'],
      ...['signal:add', 'update:bump', 'signal:close'],
    ]);
  });
});
