import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database.js';
import { codeOf, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';

class Greets {
  async run(ctx: WorkflowContext, input: { name: string }) {
    return ctx.step('greet', () => `hello ${input.name}`);
  }
}

class AwaitsSignal {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal<string>('go', { timeout: '20s' });
  }
}

/** Waits longer than any test: only the signal ends it. */
class AwaitsSignalLong {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal<string>('go', { timeout: '10m' });
  }
}

const rollback = new Error('the caller rolls back');
const count = async (tdb: TestDatabase, id: string) =>
  (await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_workflows WHERE id = $1', [id]))[0].n;
/** The live workflows holding singleton key `key`, and the starts waiting for it. */
const holders = (tdb: TestDatabase, key: string) =>
  tdb.query<{ id: string; status: string; waits: boolean }>(
    `SELECT id, status, singleton_wait IS NOT NULL AS waits FROM weft.weft_workflows
     WHERE (singleton_key = $1 OR singleton_wait = $1) AND status NOT IN ('completed','failed','cancelled','timed_out') ORDER BY id`,
    [key],
  );
/** Some session of the test database waits for a lock (a start that met a key another transaction took). */
const someoneWaits = async (tdb: TestDatabase) =>
  (
    await tdb.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    )
  )[0].n > 0;

describe.each(['none', 'workflow-lease'] as const)('transactional start, signal and cancel (%s, real PostgreSQL)', (ownership) => {
  const env = useTestEngines();
  const create = async () => {
    const e = await env.pool.create({ ownership }, (x: WeftEngine) => x.register('greets', Greets).register('awaits-signal', AwaitsSignal));
    await e.bootstrap();
    return e;
  };

  it('a start inside a rolled-back transaction leaves no workflow; inside a committed one the workflow runs', async () => {
    const e = await create();
    const ds = e.database.dataSource;
    const id = `rolled-back-${ownership}`;
    await expect(
      ds.transaction(async (manager) => {
        await e.start('greets', { name: 'a' }, { workflowId: id, manager });
        expect(await count(env.tdb, id)).toBe(0); // not visible outside the transaction
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await count(env.tdb, id)).toBe(0);
    const committed = `committed-${ownership}`;
    await ds.transaction(async (manager) => {
      await e.start('greets', { name: 'b' }, { workflowId: committed, manager });
    });
    await expect(e.result(committed, { timeout: '10s' })).resolves.toBe('hello b');
  });

  it('a start whose transaction commits late still runs (no wake-up is lost)', async () => {
    const e = await create();
    const id = `late-${ownership}`;
    await e.database.dataSource.transaction(async (manager) => {
      await e.start('greets', { name: 'late' }, { workflowId: id, manager });
      await new Promise((r) => setTimeout(r, 1500)); // longer than the wake paths' usual delays
    });
    await expect(e.result(id, { timeout: '10s' })).resolves.toBe('hello late');
  });

  it('signal and cancel with a manager take effect iff the transaction commits', async () => {
    const e = await create();
    const ds = e.database.dataSource;
    const h = await e.start('awaits-signal', {});
    await expect(
      ds.transaction(async (manager) => {
        await e.signal(h.workflowId, 'go', 'rolled back', { manager });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    await ds.transaction((manager) => e.signal(h.workflowId, 'go', 'committed', { manager }));
    await expect(h.result({ timeout: '10s' })).resolves.toBe('committed');

    const c = await e.start('awaits-signal', {});
    await expect(
      ds.transaction(async (manager) => {
        await e.cancel(c.workflowId, { reason: 'rolled back', manager });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect((await e.describe(c.workflowId)).status).toBe('running');
    await ds.transaction((manager) => e.cancel(c.workflowId, { reason: 'committed', manager }));
    await waitFor(async () => (await e.describe(c.workflowId)).status === 'cancelled', 'cancelled');
  });

  it('a singleton start with a manager takes its key iff the transaction commits; a start racing it waits for the outcome', async () => {
    const e = await create();
    const ds = e.database.dataSource;
    const key = `tx-key-${ownership}`;
    await expect(
      ds.transaction(async (manager) => {
        await e.start('awaits-signal', {}, { workflowId: `sg-rb-${ownership}`, singleton: key, manager });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await holders(env.tdb, key)).toEqual([]);

    const id = `sg-${ownership}`;
    let racing: Promise<unknown> | undefined;
    await ds.transaction(async (manager) => {
      await e.start('awaits-signal', {}, { workflowId: id, singleton: key, manager });
      // The same transaction sees its own holder.
      expect((await e.start('awaits-signal', {}, { singleton: key, manager })).workflowId).toBe(id);
      // A start outside it waits on the unique index until this transaction ends.
      racing = codeOf(e.start('awaits-signal', {}, { singleton: { key, onConflict: 'reject' } }));
      await waitFor(() => someoneWaits(env.tdb), 'the racing start to wait for the key');
    });
    const refused = (await racing) as { code?: string; err: { workflowId?: string } } | null;
    expect(refused?.code).toBe('WEFT_SINGLETON_CONFLICT');
    expect(refused?.err.workflowId).toBe(id);
    expect(await holders(env.tdb, key)).toEqual([{ id, status: 'running', waits: false }]);

    // Another transaction meets the committed holder: its handle, or the typed refusal; the transaction goes on.
    await ds.transaction(async (manager) => {
      expect((await e.start('awaits-signal', {}, { workflowId: `sg-other-${ownership}`, singleton: key, manager })).workflowId).toBe(id);
      const conflict = await codeOf(e.start('awaits-signal', {}, { singleton: { key, onConflict: 'reject' }, manager }));
      expect(conflict?.code).toBe('WEFT_SINGLETON_CONFLICT');
      await manager.query('SELECT 1');
    });
    expect(await count(env.tdb, `sg-other-${ownership}`)).toBe(0);
    await e.signal(id, 'go', 'held');
    await expect(e.result(id, { timeout: '10s' })).resolves.toBe('held');
  });

  it("onConflict 'queue' with a manager waits in line iff the transaction commits, and runs once the holder ends", async () => {
    const e = await create();
    const ds = e.database.dataSource;
    const key = `tx-queue-${ownership}`;
    const holder = await e.start('awaits-signal', {}, { workflowId: `q-holder-${ownership}`, singleton: key });
    const queue = { key, onConflict: 'queue' as const };
    await expect(
      ds.transaction(async (manager) => {
        await e.start('awaits-signal', {}, { workflowId: `q-rb-${ownership}`, singleton: queue, manager });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    const waiter = `q-waiter-${ownership}`;
    await ds.transaction((manager) => e.start('awaits-signal', {}, { workflowId: waiter, singleton: queue, manager }));
    expect(await holders(env.tdb, key)).toEqual([
      { id: holder.workflowId, status: 'running', waits: false },
      { id: waiter, status: 'pending', waits: true },
    ]);
    await e.signal(holder.workflowId, 'go', 'first');
    await expect(holder.result({ timeout: '10s' })).resolves.toBe('first');
    await waitFor(async () => (await e.describe(waiter)).status === 'running', 'the waiter to take the key');
    await e.signal(waiter, 'go', 'second');
    await expect(e.result(waiter, { timeout: '10s' })).resolves.toBe('second');
  });

  it('signalWithStart with a manager stores the start and its signal together', async () => {
    const e = await create();
    const id = `sws-${ownership}`;
    await e.database.dataSource.transaction((manager) =>
      e.signalWithStart('awaits-signal', {}, { name: 'go', payload: 'first' }, { workflowId: id, manager }),
    );
    await expect(e.result(id, { timeout: '10s' })).resolves.toBe('first');
  });
});

describe('a manager of another database', () => {
  const env = useTestEngines();
  let other: TestDatabase;
  let ds: DataSource;
  beforeAll(async () => {
    other = await createTestDatabase();
    ds = new DataSource({ type: 'postgres', url: other.url });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
    await other?.drop();
  });

  it('is refused with WEFT_TRANSACTION_DATABASE_MISMATCH before anything is written', async () => {
    const e = await env.pool.create({}, (x) => x.register('greets', Greets));
    await e.bootstrap();
    const err = await ds
      .transaction((manager) => e.start('greets', { name: 'x' }, { workflowId: 'elsewhere', manager }))
      .catch((x: unknown) => x);
    expect((err as { code?: string }).code).toBe('WEFT_TRANSACTION_DATABASE_MISMATCH');
    expect(await count(env.tdb, 'elsewhere')).toBe(0);
  });
});

describe('a manager of another DataSource on the same database', () => {
  const env = useTestEngines();
  let ds: DataSource;
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: env.tdb.url });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  it.each(['none', 'workflow-lease'] as const)('is accepted, and the workflow launches when it commits (%s)', async (ownership) => {
    // No reclaim scan for 60 s: only the launch on commit runs it in time.
    const e = await env.pool.create({ ownership, workflowClaimTtl: 300_000, workflowClaimRenewInterval: 60_000 }, (x) =>
      x.register('greets', Greets),
    );
    await e.bootstrap();
    expect(ds).not.toBe(e.database.dataSource);
    const id = `same-db-${ownership}`;
    await ds.transaction(async (manager) => {
      await e.start('greets', { name: 'same' }, { workflowId: id, manager });
      expect(await count(env.tdb, id)).toBe(0);
    });
    await expect(e.result(id, { timeout: '10s' })).resolves.toBe('hello same');
  });
});

describe('a transactional signal to a workflow parked on another engine', () => {
  const env = useTestEngines();

  it('is delivered when the transaction commits, by its NOTIFY (no poll for 60 s)', async () => {
    // Every poll (timers, claims and the messages they pass look at) is 60 s away: only the NOTIFY can wake the run in time.
    const slow = {
      ownership: 'workflow-lease' as const,
      timerPollInterval: 60_000,
      workflowClaimTtl: 300_000,
      workflowClaimRenewInterval: 60_000,
    };
    const owner = await env.pool.create({ ...slow, engineId: 'owner' }, (x) => x.register('awaits-long', AwaitsSignalLong));
    const sender = await env.pool.create({ ...slow, engineId: 'sender' }, (x) => x.register('awaits-long', AwaitsSignalLong));
    await Promise.all([owner.bootstrap(), sender.bootstrap()]);
    const h = await owner.start('awaits-long', {});
    const timers = () => env.tdb.query<{ kind: string }>('SELECT kind FROM weft.weft_timers WHERE workflow_id = $1', [h.workflowId]);
    await waitFor(async () => (await timers()).length > 0, 'the run to park on its signal (its timeout timer)');
    await sender.database.dataSource.transaction(async (manager) => {
      await sender.signal(h.workflowId, 'go', 'late', { manager });
      await new Promise((r) => setTimeout(r, 500)); // the commit comes well after the signal's statement
    });
    await expect(h.result({ timeout: '15s' })).resolves.toBe('late');
  });
});
