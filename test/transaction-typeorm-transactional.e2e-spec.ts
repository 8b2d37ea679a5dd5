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

describe('typeorm-transactional joins a transactional step (an app that uses it)', () => {
  let tdb: TestDatabase;
  let ds: DataSource;
  let app: INestApplication;

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
      providers: [OrderService, OrderWorkflow],
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
});
