import pg from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { notifyChannel } from '../storage/repositories/message.repository.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import type { WorkflowDefinition } from '../common/types.js';

class Approval {
  approved = false;
  notes: string[] = [];
  async run(ctx: WorkflowContext, input: { timeout?: number }) {
    await ctx.step('before', () => 1);
    const ok = await ctx.condition(() => this.approved, { timeout: input.timeout ?? 60_000 });
    const box = ok ? await ctx.waitForSignal<{ size: string }>('packed', { timeout: 60_000 }) : null;
    return { ok, notes: this.notes, box };
  }
  onApprove(by: string) {
    this.approved = true;
    this.notes.push(`approved by ${by}`);
  }
  onNote(note: string) {
    this.notes.push(note);
  }
  setLimit(n: number) {
    if (n < 0) throw new RangeError('limit must be >= 0');
    this.notes.push(`limit ${n}`);
    return { accepted: n };
  }
  status() {
    return { approved: this.approved, notes: this.notes };
  }
}

const approvalDef: WorkflowDefinition = {
  name: 'approval',
  factory: () => new Approval() as never,
  signalHandlers: { approve: 'onApprove', note: 'onNote' },
  updateHandlers: { 'set-limit': 'setLimit' },
  queryHandlers: { status: 'status' },
};

class Waiter {
  async run(ctx: WorkflowContext, input: { timeout: number }) {
    return ctx.waitForSignal('go', { timeout: input.timeout });
  }
}

class TwoSignals {
  async run(ctx: WorkflowContext) {
    const first = await ctx.waitForSignal('first', { timeout: 60_000 });
    const go = await ctx.waitForSignal('go', { timeout: 60_000 });
    return { first, go };
  }
}

class Child {
  async run(ctx: WorkflowContext, input: { fail?: boolean; sleep?: number }) {
    if (input.sleep) await ctx.sleep(input.sleep);
    // Fails for good: one attempt, not the default retry's half minute.
    return ctx.step(
      'work',
      () => {
        if (input.fail) throw new Error('child broke');
        return 'child-done';
      },
      { retry: { maxAttempts: 1 } },
    );
  }
}

class Parent {
  async run(ctx: WorkflowContext, input: { fail?: boolean; sleep?: number }) {
    try {
      return { child: await ctx.executeChild('child', input) };
    } catch (err) {
      return { failed: (err as { code?: string }).code };
    }
  }
}

describe('messages: signals, handlers, conditions, updates, queries, children (real PostgreSQL)', () => {
  const env = useTestEngines();
  const register = (e: WeftEngine) =>
    e
      .register(approvalDef)
      .register('waiter', Waiter)
      .register('two-signals', TwoSignals)
      .register('child', Child)
      .register('parent', Parent);

  const engine = async (opts = {}) => {
    const e = await env.pool.create(opts, register);
    await e.bootstrap();
    return e;
  };

  it('waitForSignal gets the payload, or null on timeout', async () => {
    const e = await engine();
    const h = await e.start('waiter', { timeout: 60_000 });
    await e.signal(h.workflowId, 'go', { n: 1 });
    await expect(h.result({ timeout: '5s' })).resolves.toEqual({ n: 1 });
    const t = await e.start('waiter', { timeout: 100 });
    await expect(t.result({ timeout: '5s' })).resolves.toBeNull();
  });

  it.each([
    ['woken by its NOTIFY', {}],
    ['found by the poll (no NOTIFY)', { notify: false, backgroundTasks: 'manual' }],
  ])(
    'a signal that commits after a higher id was taken in still reaches the live run (ids are drawn before commit): %s',
    async (_how, opts) => {
      const e = await engine(opts);
      const h = await e.start('two-signals', {});
      const timers = () => env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId]);
      await waitFor(async () => (await timers()).length > 0, 'the run waiting for "first"');
      const late = new pg.Client({ connectionString: env.tdb.url });
      late.on('error', () => undefined);
      await late.connect();
      try {
        // Sent as the engine sends one: the row and its NOTIFY in one transaction, left open.
        await late.query('BEGIN');
        await late.query(`INSERT INTO weft.weft_messages (workflow_id, kind, name, payload) VALUES ($1, 'signal', 'go', '"late"')`, [
          h.workflowId,
        ]);
        await late.query('SELECT pg_notify($1, $2)', [notifyChannel('weft'), h.workflowId]);
        // A higher id commits first and the run takes it in.
        await h.signal('first', 1);
        await waitFor(async () => (await h.describe()).history.some((o) => o.name === 'first'), '"first" consumed');
        await late.query('COMMIT');
      } finally {
        await late.end();
      }
      if ('notify' in opts) await e.runMaintenance();
      await expect(h.result({ timeout: '5s' })).resolves.toEqual({ first: 1, go: 'late' });
      const rows = await env.tdb.query<{ name: string }>(`SELECT name FROM weft.weft_messages WHERE workflow_id = $1 ORDER BY id`, [
        h.workflowId,
      ]);
      expect(rows.map((r) => r.name)).toEqual(['go', 'first']);
    },
  );

  it('delivers signals to handlers in arrival order and re-evaluates the condition', async () => {
    const e = await engine();
    const h = await e.start('approval', {});
    await h.signal('note', 'first');
    await h.signal('approve', 'ann');
    await h.signal('packed', { size: 'L' });
    await expect(h.result({ timeout: '5s' })).resolves.toEqual({ ok: true, notes: ['first', 'approved by ann'], box: { size: 'L' } });
    const kinds = (await h.describe()).history.map((o) => `${o.kind}:${o.name}`);
    // By seq (call order): the condition was called before the deliveries it waited for...
    expect(kinds).toEqual(['step:before', 'condition:condition', 'signal:note', 'signal:approve', 'waitForSignal:packed']);
    // ...and resolved after them (event order), which is the order replay releases them in.
    const byEvent = [...(await h.describe()).history].sort((a, b) => (a.event ?? 0) - (b.event ?? 0)).map((o) => o.name);
    expect(byEvent).toEqual(['before', 'note', 'approve', 'condition', 'packed']);
  });

  it('condition times out as false', async () => {
    const e = await engine();
    const h = await e.start('approval', { timeout: 100 });
    await expect(h.result({ timeout: '5s' })).resolves.toEqual({ ok: false, notes: [], box: null });
  });

  it('replays handler deliveries identically on another engine; a query there sees the same state', async () => {
    const a = await engine();
    const h = await a.start('approval', {});
    await h.signal('note', 'n1');
    await h.signal('approve', 'bob');
    await waitFor(async () => (await h.describe()).history.some((o) => o.kind === 'condition'), 'condition recorded');
    const live = await a.query(h.workflowId, 'status');
    await a.dispose();
    const b = await engine();
    expect(await b.query(h.workflowId, 'status')).toEqual(live);
    await b.signal(h.workflowId, 'packed', { size: 'S' });
    await expect(b.result(h.workflowId, { timeout: '5s' })).resolves.toEqual({
      ok: true,
      notes: ['n1', 'approved by bob'],
      box: { size: 'S' },
    });
  });

  it('signalWithStart: the handler sees the signal before run() begins', async () => {
    const e = await engine();
    const h = await e.signalWithStart('approval', {}, { name: 'approve', payload: 'starter' });
    await h.signal('packed', { size: 'M' });
    await expect(h.result({ timeout: '5s' })).resolves.toMatchObject({ ok: true, notes: ['approved by starter'] });
    expect((await h.describe()).history[0]).toMatchObject({ seq: 0, kind: 'signal', name: 'approve' });
  });

  it('update returns the handler value; a throwing handler is a typed error and the workflow goes on', async () => {
    const e = await engine();
    const h = await e.start('approval', {});
    await expect(h.update('set-limit', 5, { timeout: '5s' })).resolves.toEqual({ accepted: 5 });
    await expect(h.update('set-limit', -1, { timeout: '5s' })).rejects.toMatchObject({
      code: 'WEFT_UPDATE_FAILED',
      cause: expect.objectContaining({ message: 'limit must be >= 0' }),
    });
    expect(await h.query('status')).toEqual({ approved: false, notes: ['limit 5'] });
    await expect(h.update('nope', 1)).rejects.toMatchObject({ code: 'WEFT_UNKNOWN_HANDLER' });
    await expect(h.query('nope')).rejects.toMatchObject({ code: 'WEFT_UNKNOWN_HANDLER' });
  });

  it('an update that times out is withdrawn and never applied later', async () => {
    // The owner gets no NOTIFY and polls only when told to: nothing applies the update in time.
    const owner = await engine({ notify: false, backgroundTasks: 'manual' });
    const h = await owner.start('approval', {});
    await waitFor(async () => (await h.describe()).history.length === 1, 'first step');
    // A sender that does not run this type (under 'none' only one engine drives a workflow).
    const sender = await env.pool.create({ notify: false, backgroundTasks: 'manual' });
    await sender.bootstrap();
    await expect(sender.update(h.workflowId, 'set-limit', 9, { timeout: 200 })).rejects.toMatchObject({ code: 'WEFT_UPDATE_TIMEOUT' });
    await owner.runMaintenance(); // the poll now sees no pending update
    await expect(owner.update(h.workflowId, 'set-limit', 3, { timeout: '5s' })).resolves.toEqual({ accepted: 3 });
    expect(await h.query('status')).toEqual({ approved: false, notes: ['limit 3'] });
    const rows = await env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_messages WHERE workflow_id = $1 ORDER BY id`, [
      h.workflowId,
    ]);
    expect(rows.map((r) => r.status)).toEqual(['expired', 'done']);
  });

  it('an update to a suspended workflow is refused', async () => {
    const e = await engine();
    const h = await e.start('approval', {});
    await waitFor(async () => (await h.describe()).history.length === 1, 'first step');
    await e.suspend(h.workflowId);
    await expect(h.update('set-limit', 7, { timeout: 200 })).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_RUNNING' });
  });

  it('runs a child and returns its result; a failed child is a typed error in the parent', async () => {
    const e = await engine();
    const ok = await e.start('parent', {});
    await expect(ok.result({ timeout: '10s' })).resolves.toEqual({ child: 'child-done' });
    const bad = await e.start('parent', { fail: true });
    await expect(bad.result({ timeout: '10s' })).resolves.toEqual({ failed: 'WEFT_CHILD_WORKFLOW_FAILED' });
    const child = await e.describe(`${ok.workflowId}/0`);
    expect(child).toMatchObject({ status: 'completed', parentId: ok.workflowId });
  });

  it('cancelling a parent cancels its running child (parent-close policy terminate)', async () => {
    const e = await engine();
    const p = await e.start('parent', { sleep: 60_000 });
    const childId = `${p.workflowId}/0`;
    await waitFor(
      async () => (await e.list({ type: 'child', status: 'running' })).items.some((i) => i.workflowId === childId),
      'child running',
    );
    await p.cancel();
    await waitFor(async () => (await e.describe(childId)).status === 'cancelled', 'child cancelled');
  });

  it('refuses bad messages with typed errors and stores nothing', async () => {
    const e = await engine({ maxPayloadBytes: 100 });
    const count = async () => (await env.tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_messages'))[0].n;
    const before = await count();
    await expect(e.signal('missing', 'go', 1)).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_FOUND' });
    const done = await e.start('waiter', { timeout: 0 });
    await done.result({ timeout: '5s' });
    await expect(done.signal('go', 1)).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_NOT_RUNNING' });
    await expect(e.signal(done.workflowId, 'go', { big: 'x'.repeat(200) })).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_TOO_LARGE' });
    await expect(e.signal(done.workflowId, 'go', { n: BigInt(1) })).rejects.toMatchObject({ code: 'WEFT_PAYLOAD_NOT_SERIALIZABLE' });
    await expect(e.signal(done.workflowId, '', 1)).rejects.toMatchObject({ code: 'WEFT_INVALID_ARGUMENT' });
    expect(await count()).toBe(before);
  });

  it('waitForSignal on a name that has a handler is a registration error', async () => {
    class Wrong {
      async run(ctx: WorkflowContext) {
        try {
          await ctx.waitForSignal('approve');
          return 'no error';
        } catch (err) {
          return (err as { code?: string }).code;
        }
      }
    }
    const e = await env.pool.create({}, (x) =>
      x.register({ name: 'wrong', factory: () => new Wrong(), signalHandlers: { approve: 'run' } }),
    );
    await e.bootstrap();
    await expect((await e.start('wrong', {})).result({ timeout: '5s' })).resolves.toBe('WEFT_INVALID_ARGUMENT');
  });

  it('a message whose wake check fails (database away) is delivered once a check succeeds', async () => {
    // No NOTIFY: the local send is the only wake-up, so nothing else delivers it by chance.
    const e = await engine({ timerPollInterval: 100, notify: false });
    const h = await e.start('waiter', { timeout: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'parked',
    );
    await new Promise((r) => setTimeout(r, 50));
    type Check = (...a: unknown[]) => Promise<boolean>;
    const policy = e.ownership.fence as unknown as { confirmWake: Check };
    const real = policy.confirmWake.bind(policy);
    let checks = 0;
    policy.confirmWake = (...a) => (checks++ === 0 ? Promise.reject(new Error('database away')) : real(...a));
    await e.signal(h.workflowId, 'go', 'late');
    await expect(h.result({ timeout: '5s' })).resolves.toBe('late');
    expect(checks).toBeGreaterThanOrEqual(2);
  });

  it('with NOTIFY disabled the poll alone delivers a signal sent through another engine', async () => {
    const owner = await engine({ notify: false, timerPollInterval: 100 });
    const h = await owner.start('waiter', { timeout: 60_000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'parked',
    );
    const sender = await engine({ notify: false, backgroundTasks: 'manual' });
    await sender.signal(h.workflowId, 'go', 'polled');
    await expect(owner.result(h.workflowId, { timeout: '5s' })).resolves.toBe('polled');
  });
});
