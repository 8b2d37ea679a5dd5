import 'reflect-metadata';
import { INestApplication, Inject, Injectable, Module, Optional } from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { Test } from '@nestjs/testing';
import {
  currentStep,
  QueryHandler,
  SignalHandler,
  Step,
  UpdateHandler,
  WEFT_DATABASE,
  WeftEngine,
  WeftLifecycle,
  WeftModule,
  Workflow,
  WorkflowContext,
  OperationRepository,
  WorkflowEntity,
  WorkflowRepository,
} from '@weft/nest';
import type { OpenedDatabase } from '../libs/weft/src/storage/data-source.js';
import { DataSource } from 'typeorm';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';

const GREETING = Symbol('GREETING');

@Injectable()
class LedgerService {
  readonly calls: string[] = [];
  private failuresLeft = 1;

  @Step({ retry: { maxAttempts: 3, initialInterval: 1 } })
  async debit(account: string, amount: number) {
    this.calls.push(`debit:${account}`);
    if (this.failuresLeft-- > 0) throw new Error('transient ledger outage');
    return { account, amount, key: currentStep()?.idempotencyKey ?? null, attempt: currentStep()?.attempt ?? null };
  }

  /** Calls another @Step method from its body: that one must be a plain call. */
  @Step()
  async audit(what: string) {
    this.calls.push('audit');
    return `${this.note(what)}!`;
  }

  @Step({ name: 'ledger-note' })
  note(what: string): string {
    this.calls.push(`note:${what}`);
    return what.toUpperCase();
  }
}

@Module({ providers: [LedgerService, { provide: GREETING, useValue: 'hello' }], exports: [LedgerService, GREETING] })
class LedgerModule {}

let instances = 0;

@Workflow('transfer', { description: 'moves money' })
class TransferWorkflow {
  readonly serial = ++instances;
  private stage = 'new';

  constructor(
    readonly ledger: LedgerService,
    @Inject(GREETING) private readonly greeting: string,
  ) {}

  async run(ctx: WorkflowContext, input: { account: string; amount: number; sleepMs?: number }) {
    this.stage = 'debiting';
    const debit = await this.ledger.debit(input.account, input.amount);
    const audited = await this.ledger.audit('ok');
    const explicit = await ctx.step('explicit', () => this.ledger.note('inner'));
    this.stage = 'sleeping';
    await ctx.sleep(input.sleepMs ?? 10);
    return { debit, audited, explicit, greeting: this.greeting };
  }

  @QueryHandler('stage') getStage() {
    return this.stage;
  }

  @SignalHandler('poke') onPoke() {
    this.stage = 'poked';
  }

  @UpdateHandler('rename') rename(stage: string) {
    this.stage = stage;
    return stage;
  }
}

const MISSING = Symbol('MISSING');

@Workflow()
class PlainWorkflow {
  @Inject(GREETING) readonly greetingProp!: string;

  constructor(@Optional() @Inject(MISSING) readonly missing?: string) {}

  async run(_ctx: WorkflowContext, input: number) {
    return input * 2;
  }
}

@Module({ imports: [LedgerModule], providers: [TransferWorkflow, PlainWorkflow] })
class TransfersModule {}

describe('WeftModule: decorated workflows with Nest DI', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let engine: WeftEngine;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_module');
    const moduleRef = await Test.createTestingModule({
      imports: [
        ConfigModule.forRoot({ ignoreEnvFile: true, load: [() => ({ WEFT_URL: tdb.url })] }),
        WeftModule.forRootAsync({
          imports: [ConfigModule],
          inject: [ConfigService],
          useFactory: (config: ConfigService) => ({
            database: { url: config.getOrThrow<string>('WEFT_URL') },
            schema: 'weft',
            timerPollInterval: 50,
            shutdownGracePeriod: 0,
          }),
        }),
        TransfersModule,
      ],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    engine = app.get(WeftEngine);
    await expect(app.get(WeftLifecycle).ready()).resolves.toBe('ready');
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('registers @Workflow classes with their handler maps; the name defaults to the class name', () => {
    expect(engine.registry.names().sort()).toEqual(['PlainWorkflow', 'transfer']);
    const def = engine.registry.get('transfer');
    expect(def.signalHandlers).toEqual({ poke: 'onPoke' });
    expect(def.updateHandlers).toEqual({ rename: 'rename' });
    expect(def.queryHandlers).toEqual({ stage: 'getStage' });
  });

  it('runs a workflow whose @Step service methods record operations named after them', async () => {
    const handle = await engine.start('transfer', { account: 'acc-1', amount: 5 }, { workflowId: 'transfer-1' });
    const out = await handle.result<Record<string, unknown>>({ timeout: '10s' });
    expect(out).toEqual({
      debit: { account: 'acc-1', amount: 5, key: 'transfer-1:0', attempt: 2 },
      audited: 'OK!',
      explicit: 'INNER',
      greeting: 'hello',
    });
    const history = (await engine.describe('transfer-1')).history;
    expect(history.map((op) => [op.kind, op.name])).toEqual([
      ['step', 'LedgerService.debit'],
      ['step', 'LedgerService.audit'],
      ['step', 'explicit'],
      ['sleep', 'sleep'],
    ]);
    expect(history[0].attempts).toBe(2);
    // note() ran as a plain call inside both step bodies: never recorded on its own.
    expect(app.get(LedgerService).calls).toEqual(['debit:acc-1', 'debit:acc-1', 'audit', 'note:ok', 'note:inner']);
  });

  it('injects the repositories and the DataSource for reading workflows: Weft reads and TypeORM queries agree', async () => {
    const handle = await engine.start('transfer', { account: 'acc-r', amount: 1 }, { workflowId: 'transfer-read' });
    await handle.result({ timeout: '10s' });
    await expect(app.get(WorkflowRepository).get('transfer-read')).resolves.toMatchObject({ type: 'transfer', status: 'completed' });
    const history = await app.get(OperationRepository).history('transfer-read');
    expect(history.map((op) => op.name)).toEqual(['LedgerService.debit', 'LedgerService.audit', 'explicit', 'sleep']);
    const { dataSource } = app.get<OpenedDatabase>(WEFT_DATABASE);
    const row = await dataSource.getRepository(WorkflowEntity).findOneByOrFail({ id: 'transfer-read' });
    expect({ status: row.status, runNumber: row.runNumber, version: row.version }).toEqual({
      status: 'completed',
      runNumber: 1,
      version: expect.any(Number),
    });
  });

  it('the repositories are TypeORM repositories: finders and query builders read, writes are refused before anything is written', async () => {
    const workflows = app.get(WorkflowRepository);
    await (await engine.start('transfer', { account: 'acc-t', amount: 1 }, { workflowId: 'transfer-typeorm' })).result({ timeout: '10s' });
    const row = await workflows.findOneByOrFail({ id: 'transfer-typeorm' });
    expect({ type: row.type, status: row.status }).toEqual({ type: 'transfer', status: 'completed' });
    await expect(workflows.countBy({ type: 'transfer', status: 'completed' })).resolves.toBeGreaterThanOrEqual(1);
    const ops = await app.get(OperationRepository).find({ where: { workflowId: 'transfer-typeorm' }, order: { seq: 'ASC' } });
    expect(ops.map((op) => op.name)).toEqual(['LedgerService.debit', 'LedgerService.audit', 'explicit', 'sleep']);
    const refused = workflows.update({ id: 'transfer-typeorm' }, { status: 'running' });
    await expect(refused).rejects.toMatchObject({ code: 'WEFT_REPOSITORY_READ_ONLY', table: 'weft_workflows', method: 'update' });
    await expect(workflows.save({ ...row, status: 'running' })).rejects.toMatchObject({ code: 'WEFT_REPOSITORY_READ_ONLY' });
    await expect(workflows.get('transfer-typeorm')).resolves.toMatchObject({ status: 'completed', version: row.version });
  });

  it('calls a @Step method outside a workflow as a plain (synchronous) call', () => {
    const ledger = app.get(LedgerService);
    expect(ledger.note('plain')).toBe('PLAIN');
  });

  it('creates a fresh instance per execution, with the module singletons injected', async () => {
    const before = instances;
    await (await engine.start('transfer', { account: 'acc-2', amount: 1 })).result({ timeout: '10s' });
    expect(instances).toBeGreaterThan(before);
    const factory = engine.registry.get('transfer').factory;
    const [x, y] = [factory() as TransferWorkflow, factory() as TransferWorkflow];
    expect(x).not.toBe(y);
    expect(x.serial).not.toBe(y.serial);
    expect(x.ledger).toBe(app.get(LedgerService));
    const plain = engine.registry.get('PlainWorkflow').factory() as PlainWorkflow;
    expect(plain).toMatchObject({ greetingProp: 'hello', missing: undefined }); // property injection, @Optional
    await expect(engine.start('PlainWorkflow', 2).then((h) => h.result({ timeout: '10s' }))).resolves.toBe(4);
  });

  it('app.close() disposes the engine and leaves no live workflow; the workflow stays running in storage', async () => {
    await engine.start('transfer', { account: 'acc-3', amount: 1, sleepMs: 3_600_000 }, { workflowId: 'parked-1' });
    await waitFor(
      async () => (await engine.describe('parked-1')).history.some((op) => op.name === 'explicit'),
      'parked-1 reaches its sleep',
    );
    expect(engine.healthSnapshot().liveWorkflows).toBeGreaterThan(0);
    await app.close();
    expect(engine.isDisposed).toBe(true);
    expect(engine.healthSnapshot().liveWorkflows).toBe(0);
    const rows = await tdb.query<{ status: string }>(`SELECT status FROM weft.weft_workflows WHERE id = 'parked-1'`);
    expect(rows[0].status).toBe('running');
  });
});

describe('WeftModule with a DataSource owned by the app', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_module_ds');
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  it('runs on it, exposes it as WEFT_DATABASE, and leaves it open at shutdown', async () => {
    const dataSource = new DataSource({ type: 'postgres', url: tdb.url });
    await dataSource.initialize();
    try {
      const moduleRef = await Test.createTestingModule({
        imports: [WeftModule.forRoot({ database: dataSource, schema: 'weft', shutdownGracePeriod: 0 }), TransfersModule],
      }).compile();
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      expect(app.get<OpenedDatabase>(WEFT_DATABASE).dataSource).toBe(dataSource);
      await expect(
        app
          .get(WeftEngine)
          .start('PlainWorkflow', 21)
          .then((h) => h.result({ timeout: '10s' })),
      ).resolves.toBe(42);
      await app.close();
      expect(app.get(WeftEngine).isDisposed).toBe(true);
      expect(dataSource.isInitialized).toBe(true);
      await expect(dataSource.query('SELECT 1 AS one')).resolves.toEqual([{ one: 1 }]);
    } finally {
      await dataSource.destroy();
    }
  });
});
