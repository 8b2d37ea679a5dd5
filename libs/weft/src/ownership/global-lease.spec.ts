import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngineOptions } from '../engine/options.js';
import { EngineLeaseNotHeldError } from '../common/errors.js';
import { openDatabase } from '../storage/data-source.js';
import { LeaseRepository } from '../storage/repositories/lease.repository.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

/** Each run of the 'gated' step parks here until the test resolves it with a value. */
const gates = new Map<string, (value: string) => void>();
const runs: Record<string, number> = {};

class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('first', () => 1);
    return ctx.step('gated', ({ signal }) => {
      runs[input.key] = (runs[input.key] ?? 0) + 1;
      return new Promise<string>((resolve, reject) => {
        gates.set(input.key, resolve);
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      });
    });
  }
}

class Echo {
  async run(ctx: WorkflowContext, input: { v: number }) {
    return ctx.step('echo', () => input.v);
  }
}

const LEASE: WeftEngineOptions = { ownership: 'lease', leaseTtl: 900, leaseRenewInterval: 300, leaseWaitTimeout: 300 };
const TTL_MS = 900;
const GRACE_MS = 2 * 300; // TAKEOVER_GRACE_MULTIPLIER x leaseRenewInterval

interface LeaseRow {
  epoch: string;
  holder: string | null;
  expires_at: Date | null;
}

describe("ownership 'lease': one store-wide lease (real PostgreSQL)", () => {
  const env = useTestEngines();
  const warnings: Error[] = [];

  let schemaSeq = 0;
  const schemas: string[] = [];
  beforeEach(() => void schemas.push(`lease_${++schemaSeq}`));
  const schema = () => schemas[schemas.length - 1];

  const engine = (engineId: string, extra: WeftEngineOptions = {}) =>
    env.pool.create({ ...LEASE, schema: schema(), engineId, onWarning: (w) => warnings.push(w), ...extra }, (e) =>
      e.register('gated', Gated).register('echo', Echo).register('sleepy', Sleepy),
    );
  const lease = async () =>
    (await env.tdb.query<LeaseRow>(`SELECT epoch::text, holder, expires_at FROM "${schema()}".weft_global_lease`))[0];
  const workflowCount = async () =>
    Number((await env.tdb.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema()}".weft_workflows`))[0].n);
  const history = (id: string) =>
    env.tdb.query<{ seq: number; name: string; result: unknown }>(
      `SELECT seq, name, result FROM "${schema()}".weft_operations WHERE workflow_id = $1 ORDER BY seq`,
      [id],
    );
  const leaseLost = (engineId: string) =>
    warnings.some((w) => w.name === 'WeftEngineLeaseLostWarning' && (w as Error & { engineId: string }).engineId === engineId);

  it('the holder runs workflows; another engine waits leaseWaitTimeout, fails naming the holder, and may not start anything', async () => {
    const a = await engine('A1');
    await a.bootstrap();
    expect(await lease()).toMatchObject({ holder: 'A1', epoch: '1' });
    await expect((await a.start('echo', { v: 7 })).result({ timeout: '5s' })).resolves.toBe(7);

    const b = await engine('B1', { leaseWaitTimeout: 600 });
    const t0 = Date.now();
    const err = await b.bootstrap().then(
      () => null,
      (e: unknown) => e,
    );
    const waited = Date.now() - t0;
    expect(err).toBeInstanceOf(EngineLeaseNotHeldError);
    expect(err).toMatchObject({ code: 'WEFT_ENGINE_LEASE_NOT_HELD', engineId: 'B1', heldBy: 'A1' });
    expect((err as Error).message).toContain('A1');
    expect(waited).toBeGreaterThanOrEqual(600); // it waited the whole leaseWaitTimeout before giving up
    expect(waited).toBeLessThan(5_000);

    const before = await workflowCount();
    await expect(b.start('echo', { v: 1 })).rejects.toMatchObject({ code: 'WEFT_ENGINE_LEASE_NOT_HELD', engineId: 'B1' });
    expect(await workflowCount()).toBe(before); // refused before anything was written
    expect(await lease()).toMatchObject({ holder: 'A1', epoch: '1' });
    await expect((await a.start('echo', { v: 8 })).result({ timeout: '5s' })).resolves.toBe(8); // A still runs
  });

  it('when the holder stops renewing, a successor takes over at a higher epoch; the old holder is refused, halts and warns', async () => {
    const a = await engine('A2', { backgroundTasks: 'manual' }); // nothing renews A's lease
    await a.bootstrap();
    const held = await lease();
    expect(held.holder).toBe('A2');
    const [h1, h2] = [await a.start('gated', { key: 'L1' }), await a.start('gated', { key: 'L2' })];
    await waitFor(() => gates.has('L1') && gates.has('L2'), 'both gated steps running on A');
    await waitFor(
      async () => (await history(h1.workflowId)).length + (await history(h2.workflowId)).length === 2,
      "A's first steps durable",
    );
    const [lateA1, lateA2] = [gates.get('L1')!, gates.get('L2')!];

    // C waits for A's lease to expire by the database clock, takes it over and recovers both workflows.
    const c = await engine('C2', { leaseWaitTimeout: 10_000 });
    await c.bootstrap();
    const taken = await lease();
    expect(taken.holder).toBe('C2');
    expect(BigInt(taken.epoch)).toBe(BigInt(held.epoch) + 1n);
    // C took it only after A's expiry plus grace: its claim time (expires_at - TTL) is later.
    expect(taken.expires_at!.getTime() - TTL_MS).toBeGreaterThanOrEqual(held.expires_at!.getTime() + GRACE_MS);
    await waitFor(() => runs.L1 === 2 && runs.L2 === 2, 'C re-runs both in-flight steps');
    const [fromC1, fromC2] = [gates.get('L1')!, gates.get('L2')!];
    expect([fromC1, fromC2]).not.toContain(lateA1);

    lateA1('late from A'); // A's next write carries the old epoch: refused
    await waitFor(() => leaseLost('A2'), 'WeftEngineLeaseLostWarning from A');
    expect(a.ownership.gate.isHalted).toBe(true);
    expect(a.healthSnapshot().liveWorkflows).toBe(0);
    await expect(a.start('echo', { v: 1 })).rejects.toMatchObject({ code: 'WEFT_ENGINE_LEASE_NOT_HELD' });
    lateA2('late from A'); // a halted engine's other run was stopped too

    fromC1('from C');
    fromC2('from C');
    await expect(c.result(h1.workflowId, { timeout: '5s' })).resolves.toBe('from C');
    await expect(c.result(h2.workflowId, { timeout: '5s' })).resolves.toBe('from C');
    for (const id of [h1.workflowId, h2.workflowId]) {
      expect(await history(id)).toEqual([
        { seq: 0, name: 'first', result: 1 },
        { seq: 1, name: 'gated', result: 'from C' },
      ]);
    }
    expect(await lease()).toMatchObject({ holder: 'C2', epoch: taken.epoch });
  });

  it('a holder whose lease lapsed by its own clock takes no start, before any write tells it of a successor', async () => {
    // Chaos seed 516645: a holder paused past its TTL accepted two starts right after it resumed;
    // they were inserted after the successor's recovery had read the running workflows, and the
    // deposed holder halted before their first commit: running, and driven by nobody.
    const a = await engine('A6', { backgroundTasks: 'manual' }); // nothing renews A's lease
    await a.bootstrap();
    const since = performance.now();
    await waitFor(() => performance.now() - since > TTL_MS, "A's lease past its TTL by A's clock");
    const c = await engine('C6', { leaseWaitTimeout: 10_000 });
    await c.bootstrap();
    expect(await lease()).toMatchObject({ holder: 'C6' });
    await expect(a.start('echo', { v: 6 }, { workflowId: 'lapsed-start' })).rejects.toMatchObject({ code: 'WEFT_ENGINE_LEASE_NOT_HELD' });
    expect(await workflowCount()).toBe(0);
    expect(a.ownership.gate.isHalted).toBe(true);
  });

  it('a disposed holder releases the lease, so a new engine acquires it at once', async () => {
    const a = await engine('A3');
    await a.bootstrap();
    const held = await lease();
    await expect(a.dispose()).resolves.toEqual({ released: 1, failed: 0 });
    expect(await lease()).toMatchObject({ holder: null, expires_at: null, epoch: held.epoch }); // the epoch is kept

    const d = await engine('D3', { leaseWaitTimeout: 0 }); // a single attempt: no waiting for expiry
    await d.bootstrap();
    expect(await lease()).toMatchObject({ holder: 'D3', epoch: String(BigInt(held.epoch) + 1n) });
    await expect((await d.start('echo', { v: 3 })).result({ timeout: '5s' })).resolves.toBe(3);
  });

  it('a successor reusing the same engineId still deposes the stale process: the epoch, not the name, fences', async () => {
    const stale = await engine('SAME', { backgroundTasks: 'manual' });
    await stale.bootstrap();
    const held = await lease();
    const h = await stale.start('gated', { key: 'S1' });
    await waitFor(() => gates.has('S1'), 'gated step on the stale process');
    await waitFor(async () => (await history(h.workflowId)).length === 1, 'the first step durable');
    const late = gates.get('S1')!;

    const restarted = await engine('SAME', { leaseWaitTimeout: 10_000 }); // e.g. a restarted pod with a fixed engineId
    await restarted.bootstrap();
    expect(await lease()).toMatchObject({ holder: 'SAME', epoch: String(BigInt(held.epoch) + 1n) });
    await waitFor(() => runs.S1 === 2, 'the restarted process re-runs the step');
    const fresh = gates.get('S1')!;

    late('stale write');
    await waitFor(() => stale.ownership.gate.isHalted, 'the stale process halts');
    fresh('fresh write');
    await expect(restarted.result(h.workflowId, { timeout: '5s' })).resolves.toBe('fresh write');
    expect((await history(h.workflowId)).map((o) => o.result)).toEqual([1, 'fresh write']);
  });

  it('the takeover statement itself re-judges expiry by the database clock (grace included, and after a late renewal)', async () => {
    const db = await openDatabase({ database: { url: env.tdb.url, poolSize: 2 }, schema: schema() });
    try {
      const leases = new LeaseRepository(db.sql, schema());
      const run = <R>(text: string, params: unknown[] = []) => db.sql.query<R>(text, params);
      // Its own timings, with a wide grace, so a stalled machine cannot slip past the window it checks.
      const [ttl, grace] = [200, 2_000];
      type Read = { epoch: string; holder: string | null; free: boolean };
      const read = async () => (await leases.read(grace))!;
      const take = (who: string, r: Read) => leases.acquire(who, ttl, r, grace);
      await leases.ensure();
      const epoch = (await take('A', await read()))!;
      // Past expires_at but within the grace: not free, and a write with the values as read is refused too.
      const expiredAt = async () =>
        (await run<{ e: boolean }>(`SELECT expires_at < clock_timestamp() AS e FROM "${schema()}".weft_global_lease`))[0].e;
      await waitFor(expiredAt, 'expires_at passed by the database clock', 5_000);
      const inGrace = await read();
      expect(inGrace).toMatchObject({ holder: 'A', epoch, free: false });
      expect(await take('C', inGrace)).toBeNull();
      // Free by the database clock, but the holder renews before the successor's write lands: refused.
      const free = (await waitFor(
        async () => {
          const r = await read();
          return r.free ? r : null;
        },
        'expiry plus grace by the database clock',
        5_000,
      ))!;
      expect(await leases.renew(db.sql, 'A', epoch, ttl)).toBe(true);
      expect(await take('C', free)).toBeNull();
      expect(await lease()).toMatchObject({ holder: 'A', epoch });
    } finally {
      await db.close();
    }
  });
  it('a deposed holder takes no due timers and reports itself down; the new holder fires them', async () => {
    const a = await engine('A7', { backgroundTasks: 'manual' }); // nothing renews A's lease
    await a.bootstrap();
    const c = await engine('C7', { leaseWaitTimeout: 10_000, backgroundTasks: 'manual' });
    await c.bootstrap(); // after A's lease expired
    await a.runMaintenance(); // A's renewal is refused: it halts
    expect(a.ownership.gate.isHalted).toBe(true);

    const h = await c.start('sleepy', { ms: 50 });
    const due = () => env.tdb.query(`SELECT 1 FROM "${schema()}".weft_timers WHERE fire_at <= now()`);
    await waitFor(async () => (await due()).length === 1, 'the sleep timer due');
    expect((await a.runMaintenance()).timersFired).toBe(0);
    expect(await due()).toHaveLength(1); // not taken and pushed away by the deposed engine
    expect((await c.runMaintenance()).timersFired).toBe(1);
    await expect(h.result({ timeout: '5s' })).resolves.toBe('woke');
    expect(a.healthSnapshot().halted).toBe(true); // the health indicator reports it down
  });
});
