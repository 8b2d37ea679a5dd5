import { Client } from 'pg';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from '../engine/engine.js';
import { WorkflowClaimRegistry } from './claim-registry.js';
import { resolveOwnership } from './config.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

const bodies: Record<string, number> = {};
const bump = (k: string) => (bodies[k] = (bodies[k] ?? 0) + 1);

class Once {
  async run(ctx: WorkflowContext, input: { key: string }) {
    return ctx.step('once', () => {
      bump(input.key);
      return 'done';
    });
  }
}

const gates = new Map<string, () => void>();
class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('gated', () => new Promise<void>((resolve) => gates.set(input.key, resolve)));
    return ctx.step('after', () => 'after');
  }
}

class Parent {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.executeChild<number>('child', input);
  }
}

class Child {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('double', () => input.n * 2);
  }
}

class Greeted {
  private greetings: string[] = [];
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => this.greetings.length > 0, { timeout: '5s' });
    return this.greetings;
  }
  greet(who: string) {
    this.greetings.push(who);
  }
}

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };
const register = (e: WeftEngine) =>
  e
    .register('once', Once)
    .register('gated', Gated)
    .register('sleepy', Sleepy)
    .register('parent', Parent)
    .register('child', Child)
    .register({ name: 'greeted', factory: () => new Greeted(), signalHandlers: { hello: 'greet' } });

describe('starts, resumes and recovery under per-workflow claims (real PostgreSQL)', () => {
  const env = useTestEngines();
  const engine = (engineId: string, extra = {}, reg: (e: WeftEngine) => void = register) =>
    env.pool.create({ ...WL, engineId, ...extra }, reg);
  const row = async (id: string) =>
    (
      await env.tdb.query<{ status: string; run_number: number }>(`SELECT status, run_number FROM weft.weft_workflows WHERE id = $1`, [id])
    )[0];
  const claim = async (id: string) =>
    (
      await env.tdb.query<{ engine_id: string | null; epoch: string }>(
        `SELECT engine_id, epoch::text FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
        [id],
      )
    )[0];
  /** A registry of an engine that claims and then dies: it never renews nor writes. */
  const deadEngine = async (e: WeftEngine) =>
    new WorkflowClaimRegistry({ sql: e.database.sql, schema: 'weft', engineId: 'dead', config: resolveOwnership(WL) });

  it('a start takes its claim in its own statement: no cancel can commit between the insert and the claim', async () => {
    const a = await engine('A4');
    const b = await engine('B4');
    await a.bootstrap();
    await b.bootstrap();
    // Another transaction holds an uncommitted claim row for the id: the start's claim write waits on it.
    const blocker = new Client({ connectionString: env.tdb.url });
    await blocker.connect();
    await blocker.query('BEGIN');
    await blocker.query(`INSERT INTO weft.weft_workflow_claims (workflow_id) VALUES ('race-4')`);
    const started = a.start('once', { key: 'race-4' }, { workflowId: 'race-4' });
    await waitFor(
      async () =>
        (await env.tdb.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length > 0,
      'the start blocked on the claim row',
    );
    // While the claim is not written, the workflow must not be visible to a cancel either.
    const cancelled = await b.cancel('race-4').then(
      () => true,
      (err: { code?: string }) => (err.code === 'WEFT_WORKFLOW_NOT_FOUND' ? false : Promise.reject(err)),
    );
    await blocker.query('ROLLBACK');
    await blocker.end();
    await started;
    expect(cancelled).toBe(false);
    await expect(a.result('race-4', { timeout: '5s' })).resolves.toBe('done');
    expect(bodies['race-4']).toBe(1);
  });

  it('signalWithStart with start-new-if-terminal on an ended id starts the new run and delivers the signal', async () => {
    const a = await engine('A10');
    await a.bootstrap();
    const first = await a.signalWithStart('greeted', null, { name: 'hello', payload: 'one' }, { workflowId: 'greet-10' });
    await expect(first.result({ timeout: '5s' })).resolves.toEqual(['one']);
    const again = await a.signalWithStart(
      'greeted',
      null,
      { name: 'hello', payload: 'two' },
      { workflowId: 'greet-10', idPolicy: 'start-new-if-terminal' },
    );
    await expect(again.result({ timeout: '5s' })).resolves.toEqual(['two']);
    expect(await row('greet-10')).toMatchObject({ status: 'completed', run_number: 2 });
  });

  it('an ended run leaves its claim row naming its holder; another engine restarting the id takes the claim at once', async () => {
    const a = await engine('A11');
    const b = await engine('B11');
    await a.bootstrap();
    await b.bootstrap();
    await expect((await a.start('once', { key: 'ended-11' }, { workflowId: 'ended-11' })).result({ timeout: '5s' })).resolves.toBe('done');
    // The terminal commit cleared the fence and left the claim row alone (docs/decisions/0011).
    expect(await claim('ended-11')).toEqual({ engine_id: 'A11', epoch: '1' });
    const h = await b.start('once', { key: 'ended-11' }, { workflowId: 'ended-11', idPolicy: 'start-new-if-terminal' });
    // Taken in the restart's own transaction, not after A11's claim would have expired.
    expect(b.ownership.claims.registry!.held.get(h.workflowId)).toBe('2');
    expect(await claim('ended-11')).toEqual({ engine_id: 'B11', epoch: '2' });
    await expect(h.result({ timeout: '5s' })).resolves.toBe('done');
    expect(bodies['ended-11']).toBe(2);
    expect(await row('ended-11')).toMatchObject({ status: 'completed', run_number: 2 });
  });

  it('a restarted parent (start-new-if-terminal) gets a child of its own run, not the earlier run’s', async () => {
    const a = await engine('A8');
    await a.bootstrap();
    await expect((await a.start('parent', { n: 2 }, { workflowId: 'p-8' })).result({ timeout: '5s' })).resolves.toBe(4);
    const h = await a.start('parent', { n: 5 }, { workflowId: 'p-8', idPolicy: 'start-new-if-terminal' });
    await expect(h.result({ timeout: '5s' })).resolves.toBe(10);
  });

  it('a resume whose claimer died before its status commit is not stranded: the claim is taken once expired', async () => {
    const a = await engine('A5');
    await a.bootstrap();
    const h = await a.start('sleepy', { ms: 200 }, { workflowId: 'susp-5' });
    await a.suspend(h.workflowId);
    expect((await (await deadEngine(a)).acquire(h.workflowId)).ok).toBe(true); // claimed, then died
    await expect(a.resume(h.workflowId)).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_CLAIM_UNAVAILABLE', heldBy: 'dead' });
    // TTL 900 + grace 600: after that the dead holder's claim may be taken.
    await waitFor(
      () =>
        a.resume(h.workflowId).then(
          () => true,
          () => false,
        ),
      'resume succeeds once the dead claim expired',
      5000,
      100,
    );
    await expect(h.result({ timeout: '5s' })).resolves.toBe('woke');
  });

  it('a delayed start whose claimer died before its status commit is started by another engine', async () => {
    const a = await engine('A5b', { backgroundTasks: 'manual' });
    await a.bootstrap();
    const h = await a.start('once', { key: 'delayed-5' }, { workflowId: 'delayed-5', startAfter: 100 });
    expect((await (await deadEngine(a)).acquire(h.workflowId)).ok).toBe(true);
    const b = await engine('B5b');
    await b.bootstrap();
    await expect(h.result({ timeout: '8s' })).resolves.toBe('done');
    expect(bodies['delayed-5']).toBe(1);
  });

  it('a delayed-start timer fired late, for a workflow this engine already runs, leaves its claim alone', async () => {
    // An engine that stalled between taking a delayed start's timer and firing it finds the
    // workflow started by another engine meanwhile, and may hold its claim for its own run of it
    // (taken over since). Seen in the soak: the fire released that claim, the run's next commit
    // was refused, and a finished step ran again after a reclaim.
    const a = await engine('A5c', { backgroundTasks: 'manual' });
    await a.bootstrap();
    const h = await a.start('gated', { key: 'late-fire' }, { workflowId: 'late-fire' });
    await waitFor(() => gates.has('late-fire'), 'the step body to start');
    const held = await claim(h.workflowId);
    expect(held.engine_id).toBe('A5c');
    await env.tdb.query(
      `INSERT INTO weft.weft_timers (workflow_id, kind, seq, fire_at) VALUES ($1, 'delayed-start', -1, now() - interval '1 second')`,
      [h.workflowId],
    );
    await a.runMaintenance(); // fires the late timer
    expect(await claim(h.workflowId)).toEqual(held);
    gates.get('late-fire')!();
    await expect(h.result({ timeout: '5s' })).resolves.toBe('after');
    expect(await row(h.workflowId)).toMatchObject({ status: 'completed' });
  });

  it('a late delayed-start fire that takes over a dead holder’s claim of a running workflow drives it', async () => {
    const a = await engine('A5d', { backgroundTasks: 'manual' });
    await a.bootstrap();
    const h = await a.start('once', { key: 'late-takeover' }, { workflowId: 'late-takeover', startAfter: '1h' });
    // Fired by an engine that then died: running, its claim held by 'dead', expired.
    await env.tdb.query(`UPDATE weft.weft_workflows SET status = 'running', fence_epoch = 7 WHERE id = $1`, [h.workflowId]);
    await env.tdb.query(
      `UPDATE weft.weft_workflow_claims SET engine_id = 'dead', epoch = 7, expires_at = now() - interval '1 hour' WHERE workflow_id = $1`,
      [h.workflowId],
    );
    await env.tdb.query(`UPDATE weft.weft_timers SET fire_at = now() - interval '1 second' WHERE workflow_id = $1`, [h.workflowId]);
    // Only the due timers (runMaintenance's reclaim scan would take the workflow over first).
    await (a as unknown as { transitions: { processDueTimers(): Promise<number> } }).transitions.processDueTimers();
    await expect(h.result({ timeout: '5s' })).resolves.toBe('done');
    expect(bodies['late-takeover']).toBe(1);
  });

  it('a signal sent to a delayed start before it fires reaches its run at once, not at the next poll', async () => {
    // Its notice found no run to wake; the fire's launch now carries the messages it read.
    const a = await engine('A5f', { backgroundTasks: 'manual' });
    await a.bootstrap();
    const h = await a.start('greeted', undefined, { workflowId: 'signal-before-fire', startAfter: '1h' });
    await a.signal(h.workflowId, 'hello', 'before');
    await env.tdb.query(`UPDATE weft.weft_timers SET fire_at = now() - interval '1 second' WHERE workflow_id = $1`, [h.workflowId]);
    await (a as unknown as { transitions: { processDueTimers(): Promise<number> } }).transitions.processDueTimers();
    await expect(h.result({ timeout: '5s' })).resolves.toEqual(['before']);
  });

  it.each(['before', 'after'])(
    'a signal that wakes a delayed start while its timer fires (%s its read) waits for the fire, and reaches the run',
    async (when) => {
      // A signal's notice for a workflow this engine holds drives it; a delayed start whose fire had
      // just claimed it loaded as pending, and the wake let the claim go under the fire. Its commit
      // was then refused ("claimed by another engine", a claim-lost warning) and the start waited
      // for the timer's retry (docs/decisions/0056, "Found beside it").
      const warnings: Error[] = [];
      const a = await engine(`A5e-${when}`, { backgroundTasks: 'manual', onWarning: (w: Error) => warnings.push(w) });
      await a.bootstrap();
      const h = await a.start('greeted', undefined, { workflowId: `woken-fire-${when}`, startAfter: '1h' });
      await env.tdb.query(`UPDATE weft.weft_timers SET fire_at = now() - interval '1 second' WHERE workflow_id = $1`, [h.workflowId]);
      const internals = a as unknown as {
        runtime: { drive(id: string): Promise<void> };
        transitions: { processDueTimers(): Promise<number> };
      };
      const debounce = a.store.debounce;
      const read = debounce.forFire.bind(debounce);
      let woken = false;
      const wake = async (id: string) => {
        woken = true;
        await a.signal(id, 'hello', 'while firing');
        // What the signal's notice does on the engine holding the claim (messaging.onNotify), awaited here.
        expect(a.ownership.fence.holds(id)).toBe(true);
        await internals.runtime.drive(id);
      };
      debounce.forFire = async (id: string) => {
        if (woken) return read(id);
        if (when === 'before') await wake(id);
        const r = await read(id);
        if (when === 'after') await wake(id); // not in the row the fire launches from: the wake delivers it
        return r;
      };
      await internals.transitions.processDueTimers();
      expect(woken).toBe(true);
      await expect(h.result({ timeout: '5s' })).resolves.toEqual(['while firing']);
      expect(warnings.map((w) => w.name)).not.toContain('WeftWorkflowClaimLostWarning');
      expect(await row(h.workflowId)).toMatchObject({ status: 'completed', run_number: 1 });
    },
  );

  it('resume on an engine without the type leaves the claim free, so an engine with the type runs it', async () => {
    const runner = await engine('R6');
    const other = await engine('O6', {}, (e) => e.register('once', Once));
    await runner.bootstrap();
    await other.bootstrap();
    const h = await runner.start('sleepy', { ms: 100 }, { workflowId: 'elsewhere-6' });
    await runner.suspend(h.workflowId);
    await other.resume(h.workflowId);
    await expect(runner.result(h.workflowId, { timeout: '8s' })).resolves.toBe('woke');
    expect(other.ownership.claims.registry!.held.has(h.workflowId)).toBe(false);
  });

  it('recovery claims no more than maxConcurrentWorkflows', async () => {
    const a = await engine('A9', { backgroundTasks: 'manual' });
    await a.bootstrap();
    for (let i = 0; i < 20; i++) await a.start('sleepy', { ms: 60_000 }, { workflowId: `many-9-${i}` });
    await a.dispose(); // claims released, workflows still running
    const b = await engine('B9', { backgroundTasks: 'manual', maxConcurrentWorkflows: 5 });
    await b.bootstrap();
    expect(b.ownership.claims.registry!.held.size).toBe(5);
    expect((await claim('many-9-0'))?.engine_id ?? null).not.toBe('A9');
  });

  it('recovery and the reclaim scan running at once take no more than maxConcurrentWorkflows together', async () => {
    const a = await engine('A12', { backgroundTasks: 'manual' });
    await a.bootstrap();
    for (let i = 0; i < 30; i++) await a.start('sleepy', { ms: 60_000 }, { workflowId: `race-12-${i}` });
    await a.dispose(); // claims released, workflows still running
    const b = await engine('B12', { backgroundTasks: 'manual', maxConcurrentWorkflows: 5 });
    // Maintenance passes (each a reclaim scan) while bootstrap's recovery claims.
    await Promise.all([b.bootstrap(), b.runMaintenance(), b.runMaintenance()]);
    const held = await env.tdb.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM weft.weft_workflow_claims WHERE engine_id = 'B12'`, // earlier tests' running ones count too
    );
    expect(held[0].n).toBe(5);
    expect(b.ownership.claims.registry!.held.size).toBe(5);
  });

  it('an explicit resume is not refused by the backoff an engine keeps after losing the workflow', async () => {
    const a = await engine('A11');
    const b = await engine('B11');
    await a.bootstrap();
    await b.bootstrap();
    const h = await a.start('gated', { key: 'backoff-11' }, { workflowId: 'backoff-11' });
    await waitFor(() => gates.has('backoff-11'), 'the gated step running on A');
    await b.suspend(h.workflowId); // rotates the epoch: A's next write is refused and A backs off
    gates.get('backoff-11')!();
    await waitFor(() => a.ownership.claims.registry!.renewalFailures > 0, 'A deposed by the refused fence');
    const first = gates.get('backoff-11');
    await a.resume(h.workflowId);
    await waitFor(() => gates.get('backoff-11') !== first, 'the step running again after the resume');
    gates.get('backoff-11')!();
    await expect(a.result(h.workflowId, { timeout: '5s' })).resolves.toBe('after');
  });
});
