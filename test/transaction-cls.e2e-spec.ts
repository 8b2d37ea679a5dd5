import 'reflect-metadata';
import { INestApplication, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ClsModule } from 'nestjs-cls';
import { ClsPluginTransactional, getTransactionHostToken, Transactional, TransactionHost } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { Step, WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';
import { appDataSource, Order } from './fixtures/app-orders.js';

/**
 * An app that uses @nestjs-cls/transactional with its TypeORM adapter: its services write through
 * `txHost.tx` and `@Transactional()`, unchanged; inside a transactional step they write in the
 * step's transaction, so a failed attempt's writes roll back with it.
 */
@Injectable()
class OrderService {
  constructor(private readonly txHost: TransactionHost<TransactionalAdapterTypeOrm>) {}

  /** Existing code: a @Transactional() method of the app. */
  @Transactional()
  async insert(id: string, workflowId: string, attempt: number): Promise<void> {
    await this.txHost.tx.getRepository(Order).insert({ id, workflowId, attempt });
  }

  @Step({ transaction: true, name: 'orders.place', retry: { initialInterval: 1 } })
  async place(workflowId: string, failFirst: boolean): Promise<{ attempt: number; active: boolean }> {
    const attempt = (await import('@weft/nest')).currentStep()!.attempt;
    await this.txHost.tx.getRepository(Order).insert({ id: `${workflowId}:tx`, workflowId, attempt });
    await this.insert(`${workflowId}:decorated`, workflowId, attempt);
    if (failFirst && attempt === 1) throw new Error('the first attempt fails after its writes');
    return { attempt, active: this.txHost.isTransactionActive() };
  }
}

@Workflow('cls-order')
class ClsOrderWorkflow {
  constructor(private readonly orders: OrderService) {}
  async run(_ctx: WorkflowContext, input: { workflowId: string; failFirst: boolean }) {
    return this.orders.place(input.workflowId, input.failFirst);
  }
}

@Workflow('cls-awaits')
class ClsAwaitsWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.waitForSignal<string>('go', { timeout: '30s' });
  }
}

/** The app's second database (reports), with a TransactionHost of its own. */
const REPORTS = 'REPORTS_DATA_SOURCE';

describe('@nestjs-cls/transactional joins a transactional step (an app that uses it)', () => {
  let tdb: TestDatabase;
  let reportsDb: TestDatabase;
  let ds: DataSource;
  let reports: DataSource;
  let app: INestApplication;
  const rollback = new Error('the request fails');
  const exists = async (wid: string) => (await tdb.query('SELECT 1 FROM weft.weft_workflows WHERE id = $1', [wid])).length > 0;
  const host = () => app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost);

  beforeAll(async () => {
    tdb = await createTestDatabase();
    reportsDb = await createTestDatabase();
    ds = await appDataSource(tdb.url);
    reports = new DataSource({ type: 'postgres', url: reportsDb.url });
    await reports.initialize();
    @Module({
      providers: [
        { provide: DataSource, useValue: ds },
        { provide: REPORTS, useValue: reports },
      ],
      exports: [DataSource, REPORTS],
    })
    class DbModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [
        DbModule,
        ClsModule.forRoot({
          global: true,
          plugins: [
            new ClsPluginTransactional({ imports: [DbModule], adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: DataSource }) }),
            new ClsPluginTransactional({
              connectionName: 'reports',
              imports: [DbModule],
              adapter: new TransactionalAdapterTypeOrm({ dataSourceToken: REPORTS }),
            }),
          ],
        }),
        WeftModule.forRoot({
          database: ds,
          schema: 'weft',
          timerPollInterval: 50,
          logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
        }),
      ],
      providers: [OrderService, ClsOrderWorkflow, ClsAwaitsWorkflow],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
    await ds?.destroy();
    await reports?.destroy();
    await tdb?.drop();
    await reportsDb?.drop();
  });

  it("a failed first attempt's writes through txHost.tx and @Transactional() roll back: one row each", async () => {
    const engine = app.get(WeftEngine);
    const id = 'cls-1';
    const h = await engine.start('cls-order', { workflowId: id, failFirst: true }, { workflowId: id });
    await expect(h.result({ timeout: '10s' })).resolves.toEqual({ attempt: 2, active: true });
    const rows = await tdb.query<{ id: string; attempt: number }>(
      `SELECT id, attempt FROM app_orders WHERE "workflowId" = $1 ORDER BY id`,
      [id],
    );
    expect(rows).toEqual([
      { id: `${id}:decorated`, attempt: 2 },
      { id: `${id}:tx`, attempt: 2 },
    ]);
  });

  it('a start inside a request transaction (txHost.withTransaction) joins it: none on rollback, a run on commit', async () => {
    const engine = app.get(WeftEngine);
    const txHost = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(TransactionHost);
    const exists = async (wid: string) => (await tdb.query('SELECT 1 FROM weft.weft_workflows WHERE id = $1', [wid])).length > 0;
    const rollback = new Error('the request fails');
    await expect(
      txHost.withTransaction(async () => {
        await engine.start('cls-order', { workflowId: 'cls-rb', failFirst: false }, { workflowId: 'cls-rb' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await exists('cls-rb')).toBe(false);
    await txHost.withTransaction(async () => {
      await engine.start('cls-order', { workflowId: 'cls-ok', failFirst: false }, { workflowId: 'cls-ok' });
      expect(await exists('cls-ok')).toBe(false); // not before the request's transaction commits
    });
    await expect(engine.result('cls-ok', { timeout: '10s' })).resolves.toEqual({ attempt: 1, active: true });
  });

  it('signal, cancel and signalWithStart inside txHost.withTransaction: nothing on rollback, delivered on commit', async () => {
    const engine = app.get(WeftEngine);
    const txHost = host();
    const h = await engine.start('cls-awaits', {}, { workflowId: 'cls-signalled' });
    await expect(
      txHost.withTransaction(async () => {
        await engine.signal(h.workflowId, 'go', 'rolled back');
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    await txHost.withTransaction(() => engine.signal(h.workflowId, 'go', 'committed'));
    await expect(h.result({ timeout: '10s' })).resolves.toBe('committed');

    const c = await engine.start('cls-awaits', {}, { workflowId: 'cls-cancelled' });
    await expect(
      txHost.withTransaction(async () => {
        await engine.cancel(c.workflowId, { reason: 'rolled back' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect((await engine.describe(c.workflowId)).status).toBe('running');
    await txHost.withTransaction(() => engine.cancel(c.workflowId, { reason: 'committed' }));
    await waitFor(async () => (await engine.describe(c.workflowId)).status === 'cancelled', 'the cancel');

    await expect(
      txHost.withTransaction(async () => {
        await engine.signalWithStart('cls-awaits', {}, { name: 'go', payload: 'rolled back' }, { workflowId: 'cls-sws-rb' });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    expect(await exists('cls-sws-rb')).toBe(false);
    await txHost.withTransaction(() =>
      engine.signalWithStart('cls-awaits', {}, { name: 'go', payload: 'with its start' }, { workflowId: 'cls-sws' }),
    );
    await expect(engine.result('cls-sws', { timeout: '10s' })).resolves.toBe('with its start');
  });

  it('a singleton start inside txHost.withTransaction takes its key iff the transaction commits', async () => {
    const engine = app.get(WeftEngine);
    const txHost = host();
    const singleton = { key: 'cls-nightly', onConflict: 'reject' as const };
    await expect(
      txHost.withTransaction(async () => {
        await engine.start('cls-awaits', {}, { workflowId: 'cls-single-rb', singleton });
        throw rollback;
      }),
    ).rejects.toBe(rollback);
    await txHost.withTransaction(async () => {
      await engine.start('cls-awaits', {}, { workflowId: 'cls-single', singleton });
      expect(await exists('cls-single')).toBe(false);
    });
    const refused = await txHost
      .withTransaction(() => engine.start('cls-awaits', {}, { workflowId: 'cls-single-2', singleton }))
      .catch((e: unknown) => e as { code?: string; workflowId?: string });
    expect(refused).toMatchObject({ code: 'WEFT_SINGLETON_CONFLICT', workflowId: 'cls-single' });
    expect(await exists('cls-single-2')).toBe(false);
    await engine.signal('cls-single', 'go', 'one');
    await expect(engine.result('cls-single', { timeout: '10s' })).resolves.toBe('one');
  });

  it("a start inside another database's transaction (a second TransactionHost) is refused before anything is written", async () => {
    const engine = app.get(WeftEngine);
    const reportsHost = app.get<TransactionHost<TransactionalAdapterTypeOrm>>(getTransactionHostToken('reports'));
    const err = await reportsHost
      .withTransaction(() => engine.start('cls-awaits', {}, { workflowId: 'cls-elsewhere' }))
      .catch((e: unknown) => e as { code?: string });
    expect(err).toMatchObject({ code: 'WEFT_TRANSACTION_DATABASE_MISMATCH' });
    expect(await exists('cls-elsewhere')).toBe(false);
    const inReports = await reportsDb.query(
      `SELECT 1 FROM information_schema.tables WHERE table_schema = 'weft' AND table_name = 'weft_workflows'`,
    );
    expect(inReports).toEqual([]);
  });
});

describe('transactional steps with Weft on a database of its own', () => {
  let tdb: TestDatabase;
  let ds: DataSource;
  beforeAll(async () => {
    tdb = await createTestDatabase();
    ds = await appDataSource(tdb.url);
  });
  afterAll(async () => {
    await ds?.destroy();
    await tdb?.drop();
  });

  it('fail start-up naming database: dataSource when the app has a DataSource of its own', async () => {
    @Injectable()
    class Orders {
      @Step({ transaction: true })
      async save(): Promise<number> {
        return 1;
      }
    }
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({
          database: { url: tdb.url },
          schema: 'weft',
          logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
        }),
      ],
      providers: [Orders, { provide: DataSource, useValue: ds }],
    }).compile();
    const app = moduleRef.createNestApplication();
    const err = await app.init().then(
      () => null,
      (e: unknown) => e as { code?: string; message?: string },
    );
    await app.close().catch(() => undefined);
    expect(err?.code).toBe('WEFT_INVALID_CONFIGURATION');
    expect(err?.message).toContain('database: dataSource');
    expect(err?.message).toContain('Orders.save');
  });
});
