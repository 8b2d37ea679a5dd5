// WeftClsInterceptor (docs/interceptors.md#nestjs-cls): an HTTP request's CLS id and tenant,
// set by nestjs-cls's middleware, reach the workflow it starts and each step body through the
// headers stored with the workflow; a workflow started from a step body gets a CLS context of its
// own (what its start carried, nothing else of the step's); interceptor classes are resolved with DI.
import 'reflect-metadata';
import { Body, Controller, Injectable, INestApplication, Logger, type LoggerService, Module, Post } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { ClsModule, ClsService } from 'nestjs-cls';
import request from 'supertest';
import {
  currentStep,
  Step,
  WeftClsInterceptor,
  WeftEngine,
  type WeftInterceptor,
  WeftModule,
  Workflow,
  type StartInput,
  type WorkflowContext,
} from '@weft/nest';
import { createTestDatabase, type TestDatabase } from './support/database.js';

interface Seen {
  id: string | undefined;
  tenant: unknown;
  scratch: unknown;
  attempt: number | undefined;
}

/** Every line the app logs, as an app's own logger would print it: prefixed with the request id and tenant from CLS. */
const logLines: string[] = [];

@Injectable()
class TenantLogger implements LoggerService {
  constructor(private readonly cls: ClsService) {}
  private write(level: string, message: unknown, context?: unknown): void {
    const who = this.cls.isActive() ? `${this.cls.getId() ?? '-'} ${String(this.cls.get('tenantId') ?? '-')}` : 'no-cls';
    logLines.push(`[${who}] ${level} ${typeof context === 'string' ? context : ''}: ${String(message)}`);
  }
  log(message: unknown, context?: unknown) {
    this.write('log', message, context);
  }
  warn(message: unknown, context?: unknown) {
    this.write('warn', message, context);
  }
  error(message: unknown, ...rest: unknown[]) {
    this.write('error', message, rest.at(-1));
  }
}

@Injectable()
class Probe {
  private readonly logger = new Logger('Probe');

  constructor(
    private readonly cls: ClsService,
    private readonly engine: WeftEngine,
  ) {}

  seen(): Seen {
    return {
      id: this.cls.isActive() ? this.cls.getId() : undefined,
      tenant: this.cls.get('tenantId'),
      scratch: this.cls.get('scratch'),
      attempt: currentStep()?.attempt,
    };
  }

  @Step({ name: 'cls.look' })
  async look(): Promise<Seen> {
    this.logger.log('looking in a step');
    return this.seen();
  }

  /** Sets a CLS key no interceptor carries, then starts a workflow from inside this step body. */
  @Step({ name: 'cls.spawn' })
  async spawn(workflowId: string): Promise<string> {
    this.cls.set('scratch', 'step-only');
    return (await this.engine.start('cls-inner', {}, { workflowId: `${workflowId}-inner` })).workflowId;
  }
}

@Workflow('cls-order')
class ClsOrder {
  private readonly logger = new Logger('ClsOrder');
  constructor(private readonly probe: Probe) {}
  async run(ctx: WorkflowContext, input: { workflowId: string }) {
    if (!ctx.isReplaying) this.logger.log(`running ${input.workflowId}`);
    const inRun = this.probe.seen();
    const inStep = await this.probe.look();
    const inner = await this.probe.spawn(input.workflowId);
    return { inRun, inStep, inner };
  }
}

@Workflow('cls-inner')
class ClsInner {
  constructor(private readonly probe: Probe) {}
  async run() {
    return this.probe.look();
  }
}

/** Resolved with DI by WeftModule: counts starts through an injected service. */
@Injectable()
class StartCounter {
  n = 0;
}

@Injectable()
class CountingInterceptor implements WeftInterceptor {
  constructor(private readonly counter: StartCounter) {}
  async start(input: StartInput, next: (i: StartInput) => Promise<string>) {
    this.counter.n++;
    return next(input);
  }
}

@Controller('orders')
class OrdersController {
  constructor(private readonly engine: WeftEngine) {}
  @Post()
  async create(@Body() body: { workflowId: string }) {
    const h = await this.engine.start('cls-order', body, { workflowId: body.workflowId });
    return { workflowId: h.workflowId };
  }
}

@Module({ providers: [StartCounter], exports: [StartCounter] })
class CounterModule {}

describe('WeftClsInterceptor (nestjs-cls context into workflows and steps)', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let engine: WeftEngine;

  beforeAll(async () => {
    tdb = await createTestDatabase();
    const moduleRef = await Test.createTestingModule({
      imports: [
        CounterModule,
        ClsModule.forRoot({
          global: true,
          middleware: {
            mount: true,
            generateId: true,
            idGenerator: (req: { headers: Record<string, string | undefined> }) => req.headers['x-request-id'] ?? 'generated',
            setup: (cls, req: { headers: Record<string, string | undefined> }) => cls.set('tenantId', req.headers['x-tenant-id']),
          },
        }),
        WeftModule.forRootAsync({
          imports: [CounterModule],
          useFactory: () => ({
            database: { url: tdb.url },
            schema: 'weft',
            timerPollInterval: 50,
            interceptors: [CountingInterceptor, WeftClsInterceptor.carrying('tenantId')],
            logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
          }),
        }),
      ],
      controllers: [OrdersController],
      providers: [Probe, ClsOrder, ClsInner, TenantLogger],
    }).compile();
    app = moduleRef.createNestApplication();
    app.useLogger(app.get(TenantLogger));
    await app.init();
    engine = app.get(WeftEngine);
  });
  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it("carries the request's CLS id and tenant into the workflow, its steps, and a workflow a step starts", async () => {
    const res = await request(app.getHttpServer())
      .post('/orders')
      .set('x-request-id', 'req-42')
      .set('x-tenant-id', 'tenant-7')
      .send({ workflowId: 'cls-1' })
      .expect(201);
    expect(res.body).toEqual({ workflowId: 'cls-1' });
    const out = await engine.handle('cls-1').result({ timeout: '30s' });
    expect(out).toEqual({
      inRun: { id: 'req-42', tenant: 'tenant-7', attempt: undefined },
      inStep: { id: 'req-42', tenant: 'tenant-7', attempt: 1 },
      inner: 'cls-1-inner',
    });
    // Started inside the step body: its start carried the step's id and tenant, and nothing else of
    // that step's CLS context (its "scratch" key) reached the new workflow's own context.
    await expect(engine.handle('cls-1-inner').result({ timeout: '30s' })).resolves.toEqual({
      id: 'req-42',
      tenant: 'tenant-7',
      attempt: 1,
    });
    const [row] = await tdb.query<{ headers: Record<string, string> }>(`SELECT headers FROM weft.weft_workflows WHERE id = 'cls-1'`);
    expect(row.headers).toEqual({ 'cls:id': 'req-42', 'cls.tenantId': '"tenant-7"' });
    expect(app.get(StartCounter).n).toBe(2); // the DI-resolved interceptor saw both starts
    // The app's own log lines, written from run() and from each step body, carry the request's id and tenant.
    expect(logLines).toEqual(
      expect.arrayContaining([
        '[req-42 tenant-7] log ClsOrder: running cls-1',
        '[req-42 tenant-7] log Probe: looking in a step', // cls-1's step, and cls-1-inner's
      ]),
    );
    expect(logLines.filter((l) => l.includes('looking in a step') && !l.startsWith('[req-42 tenant-7]'))).toEqual([]);
  });

  it('gives a workflow started outside any request a CLS context of its own, empty', async () => {
    const h = await engine.start('cls-inner', {}, { workflowId: 'cls-no-request' });
    await expect(h.result({ timeout: '30s' })).resolves.toEqual({ id: undefined, tenant: undefined, attempt: 1 });
    const [row] = await tdb.query<{ headers: unknown }>(`SELECT headers FROM weft.weft_workflows WHERE id = 'cls-no-request'`);
    expect(row.headers).toBeNull();
  });
});
