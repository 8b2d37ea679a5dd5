import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { currentWorkflowContext } from './als.js';
import { UpdateFailedError, UpdateRejectedError, UpdateTimeoutError, WorkflowAlreadyStartedError } from '../common/errors.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import type { WeftEngine } from './engine.js';

// Update handlers with Temporal's semantics (DESIGN 9.3, docs/messages.md): async handlers that
// await ctx operations, validators that run before anything is recorded, the caller's timeout after
// acceptance, and updateWithStart.

/** Step bodies run per name, across engines (a step that ran twice shows here). */
const bodies = new Map<string, number>();
const ran = (name: string): number => {
  bodies.set(name, (bodies.get(name) ?? 0) + 1);
  return bodies.get(name)!;
};

class Ledger {
  declare ctx: WorkflowContext;
  log: string[] = [];
  released = false;
  done = false;

  async run() {
    this.log.push('run');
    await this.ctx.condition(() => this.done);
    return this.log;
  }

  /** Two in flight interleave: a step, a sleep, a wait for `release`, a second step. */
  async credit(tag: string) {
    this.log.push(`${tag}:begin`);
    await this.ctx.step(`${tag}-first`, async () => {
      ran(`${tag}-first`);
      await new Promise((r) => setTimeout(r, tag.endsWith('1') ? 30 : 5));
      return 1;
    });
    this.log.push(`${tag}:stepped`);
    await this.ctx.sleep(20);
    this.log.push(`${tag}:slept`);
    await this.ctx.condition(() => this.released);
    await this.ctx.step(`${tag}-second`, () => ran(`${tag}-second`));
    this.log.push(`${tag}:end`);
    return `${tag} done`;
  }

  async slow(tag: string) {
    await this.ctx.step(`slow-${tag}`, () => ran(`slow-${tag}`));
    await this.ctx.condition(() => this.released);
    return `slow ${tag}`;
  }

  /** Waits at once: its wait asks for a pump from inside the pump that delivered it. */
  async gate(tag: string) {
    await this.ctx.condition(() => this.released);
    return `gate ${tag}`;
  }

  async failing(why: string) {
    this.log.push('failing:begin');
    await this.ctx.step('before-failure', () => 'x');
    throw new RangeError(why);
  }

  /** Handlers reach the context as this.ctx, and currentWorkflowContext() works there too. */
  async whoAmI() {
    const ambient = currentWorkflowContext();
    return { same: ambient === this.ctx, id: this.ctx.workflowId, seen: [...this.log] };
  }

  checkTag(tag: unknown) {
    if (typeof tag !== 'string' || tag.length === 0) throw new TypeError('tag must be a non-empty string', { cause: new Error('empty') });
    if (this.done) throw new Error('the ledger is closed');
  }

  callsCtx() {
    void this.ctx.now();
  }

  release() {
    this.released = true;
  }

  finish() {
    this.done = true;
  }

  read() {
    return this.log;
  }
}

const ledgerDef: WorkflowDefinition = {
  name: 'ledger',
  factory: () => new Ledger() as never,
  signalHandlers: { release: 'release', finish: 'finish' },
  updateHandlers: {
    credit: 'credit',
    slow: 'slow',
    gate: 'gate',
    failing: 'failing',
    whoAmI: 'whoAmI',
    guarded: 'credit',
    ctxValidator: 'credit',
  },
  updateValidators: { credit: 'checkTag', guarded: 'checkTag', ctxValidator: 'callsCtx' },
  queryHandlers: { log: 'read' },
};

const register = (e: WeftEngine) => e.register(ledgerDef);

describe('async update handlers', () => {
  const env = useTestEngines();
  const ops = async (id: string) =>
    (await env.tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_operations WHERE workflow_id = $1', [id]))[0].n;
  const messages = (id: string) =>
    env.tdb.query<{ status: string }>(`SELECT status FROM weft.weft_messages WHERE workflow_id = $1 AND kind = 'update'`, [id]);

  it('await steps, sleeps and conditions; two in flight interleave and both answer their callers', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-live';
    await a.start('ledger', {}, { workflowId: id });
    const u1 = a.update<string>(id, 'credit', 'u1', { timeout: '20s' });
    const u2 = a.update<string>(id, 'credit', 'u2', { timeout: '20s' });
    await waitFor(async () => (await a.query<string[]>(id, 'log')).filter((l) => l.endsWith(':slept')).length === 2, 'both handlers slept');
    await a.signal(id, 'release');
    expect(await Promise.all([u1, u2])).toEqual(['u1 done', 'u2 done']);
    const log = await a.query<string[]>(id, 'log');
    for (const tag of ['u1', 'u2']) {
      const mine = log.filter((l) => l.startsWith(`${tag}:`));
      expect(mine).toEqual([`${tag}:begin`, `${tag}:stepped`, `${tag}:slept`, `${tag}:end`]);
    }
    expect(log[0]).toBe('run');
    expect((await messages(id)).map((m) => m.status)).toEqual(['done', 'done']);
    await a.signal(id, 'finish');
    await a.result(id, { timeout: '10s' });
  });

  it('two updates in flight interleave, and a takeover replays them in the same order', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-takeover';
    await a.start('ledger', {}, { workflowId: id });
    const callers = [a.update(id, 'credit', 'k1', { timeout: '30s' }), a.update(id, 'credit', 'k2', { timeout: '30s' })];
    for (const c of callers) c.catch(() => undefined); // their engine goes away under them
    // Both handlers past their first step, its record durable (a step not recorded may run again),
    // so at least one waits in its sleep (a stored timer) when the first engine goes.
    const stepped = async () => (await a.describe(id)).history.filter((op) => op.kind === 'step').length === 2;
    await waitFor(
      async () => (await a.query<string[]>(id, 'log')).filter((l) => l.endsWith(':stepped')).length === 2 && (await stepped()),
      'both stepped',
    );
    const live = await a.query<string[]>(id, 'log');
    await a.dispose();

    const b = await env.pool.create({}, register);
    await b.bootstrap();
    // The replay rebuilds what the first engine had, in its order, and goes on from there.
    await waitFor(
      async () => (await b.query<string[]>(id, 'log')).filter((l) => l.endsWith(':slept')).length === 2,
      'both slept on b',
      20_000,
    );
    expect((await b.query<string[]>(id, 'log')).slice(0, live.length)).toEqual(live);
    await b.signal(id, 'release');
    await waitFor(async () => (await messages(id)).every((m) => m.status === 'done'), 'both updates done', 20_000);
    const log = await b.query<string[]>(id, 'log');
    expect(log.slice(0, live.length)).toEqual(live);
    for (const tag of ['k1', 'k2']) {
      expect(log.filter((l) => l.startsWith(`${tag}:`))).toEqual([`${tag}:begin`, `${tag}:stepped`, `${tag}:slept`, `${tag}:end`]);
      expect(bodies.get(`${tag}-first`)).toBe(1); // recorded before the takeover: never run again
      expect(bodies.get(`${tag}-second`)).toBe(1);
    }
    // Nothing left behind: every sleep was recorded, no timer of a wait stays.
    const timers = await env.tdb.query('SELECT seq FROM weft.weft_timers WHERE workflow_id = $1 AND seq >= 0', [id]);
    expect(timers).toEqual([]);
    expect((await b.describe(id)).history.filter((op) => op.kind === 'sleep')).toHaveLength(2);
    await b.signal(id, 'finish');
    await b.result(id, { timeout: '10s' });
  });

  it("a caller's timeout after acceptance: UpdateTimeoutError with accepted, the update still completes, no step runs twice", async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-timeout';
    await a.start('ledger', {}, { workflowId: id });
    const err = await a.update(id, 'slow', 't1', { timeout: '300ms' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpdateTimeoutError);
    expect(err).toMatchObject({ code: 'WEFT_UPDATE_TIMEOUT', accepted: true });
    expect((await messages(id)).map((m) => m.status)).toEqual(['accepted']);
    await a.signal(id, 'release');
    await waitFor(async () => (await messages(id))[0]?.status === 'done', 'the update to complete');
    const [row] = await env.tdb.query<{ result: unknown }>(`SELECT result FROM weft.weft_messages WHERE workflow_id = $1`, [id]);
    expect(row.result).toEqual({ value: 'slow t1' });
    expect(bodies.get('slow-t1')).toBe(1);
  });

  it('handlers that wait at once, delivered together, each run once', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-gates';
    await a.start('ledger', {}, { workflowId: id });
    const gates = ['g1', 'g2', 'g3'].map((g) => a.update(id, 'gate', g, { timeout: '20s' }));
    await waitFor(async () => (await messages(id)).filter((m) => m.status === 'accepted').length === 3, 'all three accepted');
    await a.signal(id, 'release');
    expect(await Promise.all(gates)).toEqual(['gate g1', 'gate g2', 'gate g3']);
    expect((await a.describe(id)).history.filter((op) => op.kind === 'update')).toHaveLength(3);
  });

  it('a handler that throws fails the update (its cause kept); what it did stays, and the workflow goes on', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-fails';
    await a.start('ledger', {}, { workflowId: id });
    const err = (await a.update(id, 'failing', 'no', { timeout: '10s' }).catch((e: unknown) => e)) as UpdateFailedError;
    expect(err).toBeInstanceOf(UpdateFailedError);
    expect(err.cause).toMatchObject({ name: 'RangeError', message: 'no' });
    expect(await a.query(id, 'log')).toEqual(['run', 'failing:begin']);
    expect(await a.update(id, 'whoAmI', null, { timeout: '10s' })).toEqual({ same: true, id, seen: ['run', 'failing:begin'] });
    await a.signal(id, 'finish');
    expect(await a.result(id, { timeout: '10s' })).toEqual(['run', 'failing:begin']);
  });

  it('a validator that rejects: UpdateRejectedError with its message and cause, no history, no pending row', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-validated';
    await a.start('ledger', {}, { workflowId: id });
    await waitFor(async () => (await a.describe(id)).history.length > 0 || (await ops(id)) >= 0, 'started');
    const before = await ops(id);
    const err = (await a.update(id, 'guarded', '', { timeout: '10s' }).catch((e: unknown) => e)) as UpdateRejectedError;
    expect(err).toBeInstanceOf(UpdateRejectedError);
    expect(err.code).toBe('WEFT_UPDATE_REJECTED');
    expect(err.message).toContain('tag must be a non-empty string');
    expect(err.cause).toMatchObject({ name: 'TypeError', message: 'tag must be a non-empty string' });
    expect(err.cause.cause).toMatchObject({ message: 'empty' });
    expect(await ops(id)).toBe(before);
    expect(await env.tdb.query('SELECT id FROM weft.weft_messages WHERE workflow_id = $1', [id])).toEqual([]);
    expect(await a.query(id, 'log')).toEqual(['run']);

    // A validator that calls ctx is refused as a rejection: it must decide from state and arguments.
    const ctxErr = await a.update(id, 'ctxValidator', 'x', { timeout: '10s' }).catch((e: unknown) => e);
    expect(ctxErr).toBeInstanceOf(UpdateRejectedError);
    expect((ctxErr as Error).message).toContain('not allowed in an update validator');
    expect(await ops(id)).toBe(before);

    // State-aware: once closed, the same validator refuses what it accepted before.
    await a.signal(id, 'finish');
    await a.result(id, { timeout: '10s' });
  });

  it('updateWithStart starts a workflow, runs run() to its first wait, then the handler, and returns its result', async () => {
    const a = await env.pool.create({}, register);
    await a.bootstrap();
    const id = 'ledger-uws';
    const first = a.updateWithStart<string>('ledger', {}, { workflowId: id }, 'whoAmI', null, { timeout: '10s' });
    expect(await first).toEqual({ same: true, id, seen: ['run'] }); // run() went first
    expect(await a.query(id, 'log')).toEqual(['run']);
    // Found by the id policy (return-existing): the same workflow takes the second update.
    expect(await a.updateWithStart('ledger', {}, { workflowId: id }, 'whoAmI', null, { timeout: '10s' })).toEqual({
      same: true,
      id,
      seen: ['run'],
    });
    expect((await a.list({ idPrefix: 'ledger-uws' })).items).toHaveLength(1);
    await expect(a.updateWithStart('ledger', {}, { workflowId: id, idPolicy: 'reject-duplicate' }, 'whoAmI')).rejects.toBeInstanceOf(
      WorkflowAlreadyStartedError,
    );
    // A rejected update with start: the workflow is started, the update leaves nothing.
    await expect(a.updateWithStart('ledger', {}, { workflowId: 'ledger-uws-2' }, 'guarded', '')).rejects.toBeInstanceOf(
      UpdateRejectedError,
    );
    expect(await a.query('ledger-uws-2', 'log')).toEqual(['run']);
    for (const w of [id, 'ledger-uws-2']) await a.signal(w, 'finish');
  });
});
