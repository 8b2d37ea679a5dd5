import 'reflect-metadata';
import { INestApplication, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  addTransactionalDataSource,
  initializeTransactionalContext,
  runInTransaction,
  StorageDriver,
  Transactional,
} from 'typeorm-transactional';
import { currentStep, Step, WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import { DataSource, Repository } from 'typeorm';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { quietLogger, waitFor } from './support/engine.js';
import { appDataSource, Order } from './fixtures/app-orders.js';

/**
 * An app that uses typeorm-transactional: its repositories and @Transactional() methods are
 * unchanged; inside a transactional step they write in the step's transaction, so a failed
 * attempt's writes roll back with it.
 */
@Injectable()
class OrderService {
  constructor(private readonly orders: Repository<Order>) {}

  @Transactional()
  async insert(id: string, workflowId: string, attempt: number): Promise<void> {
    await this.orders.insert({ id, workflowId, attempt });
  }

  @Step({ transaction: true, name: 'orders.place', retry: { initialInterval: 1 } })
  async place(workflowId: string): Promise<number> {
    const attempt = currentStep()!.attempt;
    await this.insert(`${workflowId}:decorated`, workflowId, attempt);
    await this.orders.insert({ id: `${workflowId}:repository`, workflowId, attempt });
    if (attempt === 1) throw new Error('the first attempt fails after its writes');
    return attempt;
  }
}

@Workflow('typeorm-transactional-order')
class OrderWorkflow {
  constructor(private readonly orders: OrderService) {}
  async run(_ctx: WorkflowContext, input: { workflowId: string }) {
    return this.orders.place(input.workflowId);
  }
}

@Workflow('tt-awaits')
class AwaitsWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal<string>('go', { timeout: '30s' });
  }
}

describe('typeorm-transactional joins a transactional step (an app that uses it)', () => {
  let tdb: TestDatabase;
  let ds: DataSource;
  let app: INestApplication;
  const rollback = new Error('the request fails');
  const exists = async (wid: string) => (await tdb.query('SELECT 1 FROM weft.weft_workflows WHERE id = $1', [wid])).length > 0;

  beforeAll(async () => {
    initializeTransactionalContext({ storageDriver: StorageDriver.ASYNC_LOCAL_STORAGE });
    tdb = await createTestDatabase();
    ds = addTransactionalDataSource(await appDataSource(tdb.url));
    @Module({
      providers: [
        { provide: DataSource, useValue: ds },
        { provide: Repository, useFactory: () => ds.getRepository(Order) },
      ],
      exports: [DataSource, Repository],
    })
    class DbModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        DbModule,
        WeftModule.forRoot({
          database: ds,
          schema: 'weft',
          timerPollInterval: 50,
          logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
        }),
      ],
      providers: [OrderService, OrderWorkflow, AwaitsWorkflow],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await ds?.destroy();
    await tdb?.drop();
  });

  it("a failed first attempt's writes through a repository and @Transactional() roll back: one row each", async () => {
    const engine = app.get(WeftEngine);
    const id = 'tt-1';
    const h = await engine.start('typeorm-transactional-order', { workflowId: id }, { workflowId: id });
    await expect(h.result({ timeout: '10s' })).resolves.toBe(2);
    const rows = await tdb.query<{ id: string; attempt: number }>(
      `SELECT id, attempt FROM app_orders WHERE "workflowId" = $1 ORDER BY id`,
      [id],
    );
    expect(rows).toEqual([
      { id: `${id}:decorated`, attempt: 2 },
      { id: `${id}:repository`, attempt: 2 },
    ]);
  });

  it('a start inside a @Transactional() scope joins it: none on rollback, a run on commit', async () => {
    const engine = app.get(WeftEngine);
    const exists = async (wid: string) => (await tdb.query('SELECT 1 FROM weft.weft_workflows WHERE id = $1', [wid])).length > 0;
    const rollback = new Error('the request fails');
    await expect(
      runInTransaction(async () => {
        await engine.start('typeorm-transactional-order', { workflowId: 'tt-rb' }, { workflowId: 'tt-rb' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await exists('tt-rb')).toBe(false);
    await runInTransaction(async () => {
      await engine.start('typeorm-transactional-order', { workflowId: 'tt-ok' }, { workflowId: 'tt-ok' });
      expect(await exists('tt-ok')).toBe(false); // not before the transaction commits
    });
    await expect(engine.result('tt-ok', { timeout: '10s' })).resolves.toBe(2);
  });

  it('signal, cancel and signalWithStart inside a @Transactional() scope: nothing on rollback, delivered on commit', async () => {
    const engine = app.get(WeftEngine);
    const h = await engine.start('tt-awaits', {}, { workflowId: 'tt-signalled' });
    await expect(
      runInTransaction(async () => {
        await engine.signal(h.workflowId, 'go', 'rolled back');
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    await runInTransaction(() => engine.signal(h.workflowId, 'go', 'committed'));
    await expect(h.result({ timeout: '10s' })).resolves.toBe('committed');

    const c = await engine.start('tt-awaits', {}, { workflowId: 'tt-cancelled' });
    await expect(
      runInTransaction(async () => {
        await engine.cancel(c.workflowId, { reason: 'rolled back' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect((await engine.describe(c.workflowId)).status).toBe('running');
    await runInTransaction(() => engine.cancel(c.workflowId, { reason: 'committed' }));
    await waitFor(async () => (await engine.describe(c.workflowId)).status === 'cancelled', 'the cancel');

    await expect(
      runInTransaction(async () => {
        await engine.signalWithStart('tt-awaits', {}, { name: 'go', payload: 'rolled back' }, { workflowId: 'tt-sws-rb' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await exists('tt-sws-rb')).toBe(false);
    await runInTransaction(() =>
      engine.signalWithStart('tt-awaits', {}, { name: 'go', payload: 'with its start' }, { workflowId: 'tt-sws' }),
    );
    await expect(engine.result('tt-sws', { timeout: '10s' })).resolves.toBe('with its start');
  });

  it("a start inside a @Transactional() scope of another database than Weft's is refused before anything is written", async () => {
    // Weft on a database of its own (its DataSource not registered with typeorm-transactional): the
    // scope's transaction is the app's default DataSource's, on the app's database.
    const weftDb = await createTestDatabase();
    const other = await WeftEngine.create({ database: { url: weftDb.url }, schema: 'weft', logger: quietLogger(), shutdownGracePeriod: 0 });
    try {
      other.register('tt-awaits', AwaitsWorkflow);
      await other.bootstrap();
      const err = await runInTransaction(() => other.start('tt-awaits', {}, { workflowId: 'tt-elsewhere' })).catch(
        (e: unknown) => e as { code?: string },
      );
      expect(err).toMatchObject({ code: 'WEFT_TRANSACTION_DATABASE_MISMATCH' });
      expect(await weftDb.query('SELECT id FROM weft.weft_workflows')).toEqual([]);
      expect(await exists('tt-elsewhere')).toBe(false);
    } finally {
      await other.dispose();
      await weftDb.drop();
    }
  });
});
