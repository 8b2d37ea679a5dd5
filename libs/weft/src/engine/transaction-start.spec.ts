import { DataSource } from 'typeorm';
import { createTestDatabase, type TestDatabase } from '../../../../test/support/database.js';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
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

const rollback = new Error('the caller rolls back');
const count = async (tdb: TestDatabase, id: string) =>
  (await tdb.query<{ n: number }>('SELECT count(*)::int AS n FROM weft.weft_workflows WHERE id = $1', [id]))[0].n;

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
