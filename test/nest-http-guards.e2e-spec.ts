import 'reflect-metadata';
import {
  CanActivate,
  ExecutionContext,
  Inject,
  Injectable,
  INestApplication,
  Module,
  ModuleMetadata,
  UnauthorizedException,
} from '@nestjs/common';
import { ConfigModule, ConfigService } from '@nestjs/config';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { UpdateHandler, WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { type Route, weftRoutes } from './support/weft-routes.js';

// docs/api.md, "Protecting the Weft routes": http.guards go on every Weft route, the app's
// global guards apply too, and error stacks only leave through guarded routes.

@Workflow('gate')
class GateWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.condition(() => false, { timeout: '1h' });
  }
  @UpdateHandler('echo') echo(args: unknown) {
    return args;
  }
}

@Workflow('boom')
class BoomWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.step(
      'explode',
      () => {
        throw new Error('kaboom');
      },
      { retry: { maxAttempts: 1 } },
    );
  }
}

/** Catches its failed child and ends: the child's failure is recorded in the parent's history and messages. */
@Workflow('parent-of-boom')
class ParentOfBoomWorkflow {
  async run(ctx: WorkflowContext) {
    try {
      await ctx.executeChild('boom', null, { workflowId: 'boom-child' });
    } catch (err) {
      return { caught: (err as Error).name };
    }
  }
}

type Req = { headers: Record<string, string | string[] | undefined> };
const header = (ctx: ExecutionContext, name: string) => ctx.switchToHttp().getRequest<Req>().headers[name];

/** Given by type: 401 without `x-a: yes`. */
@Injectable()
class HeaderAGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    if (header(ctx, 'x-a') !== 'yes') throw new UnauthorizedException();
    return true;
  }
}

/** Given as an instance: false (Nest's 403) without `x-b: yes`. */
const headerBGuard: CanActivate = { canActivate: (ctx) => header(ctx, 'x-b') === 'yes' };

/** An app-wide guard: 403 without `x-global: yes`. */
@Injectable()
class GlobalGuard implements CanActivate {
  canActivate(ctx: ExecutionContext): boolean {
    return header(ctx, 'x-global') === 'yes';
  }
}

/** Injects the app's ConfigService (a global module): the key comes from configuration. */
@Injectable()
class ConfiguredKeyGuard implements CanActivate {
  constructor(
    private readonly config: ConfigService,
    private readonly engine: WeftEngine, // and one of Weft's own providers
  ) {}
  canActivate(ctx: ExecutionContext): boolean {
    if (!this.engine.engineId) return false;
    return header(ctx, 'x-key') === this.config.getOrThrow<string>('WEFT_TEST_KEY');
  }
}

const KEY = Symbol('KEY');
@Module({ providers: [{ provide: KEY, useValue: 'from-keys-module' }], exports: [KEY] })
class KeysModule {}

/** Injects a token of a non-global module, brought in with forRootAsync({ imports }). */
@Injectable()
class ImportedKeyGuard implements CanActivate {
  constructor(@Inject(KEY) private readonly key: string) {}
  canActivate(ctx: ExecutionContext): boolean {
    return header(ctx, 'x-key') === this.key;
  }
}

/** What the HTTP adapter (Express) actually routes: nothing beyond the controllers' metadata. */
function expressRoutes(app: INestApplication): Route[] {
  const router = (
    app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } }
  ).router;
  return router.stack
    .flatMap((layer) =>
      layer.route ? Object.keys(layer.route.methods).map((m) => ({ method: m.toUpperCase(), path: layer.route!.path })) : [],
    )
    .map((r) => ({ ...r, path: r.path.replace(/(.)\/$/, '$1') }))
    .sort((a, b) => `${a.path} ${a.method}`.localeCompare(`${b.path} ${b.method}`));
}

/** `:id` is the running gate, `:name` its update handler, `:file` a dashboard asset; any other parameter gets a placeholder. */
const concrete = (path: string) => path.replace(/:(\w+)/g, (_m, p: string) => ({ id: 'gate-1', name: 'echo', file: 'app.js' })[p] ?? 'x');

function send(http: ReturnType<typeof request>, route: Route, headers: Record<string, string>) {
  const url = concrete(route.path);
  const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head' | 'options';
  // Any method a later route may use; the ones with a body get an empty JSON object.
  const req = ['post', 'put', 'patch'].includes(method) ? http[method](url).send({}) : http[method](url);
  for (const [k, v] of Object.entries(headers)) req.set(k, v);
  return req;
}

describe('Weft HTTP routes behind guards', () => {
  let tdb: TestDatabase;
  let schemas = 0;
  const apps: INestApplication[] = [];

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_http_guards');
  });
  afterAll(async () => {
    for (const app of apps) await app.close();
    await tdb?.drop();
  });

  /** One app per case, each on its own schema of the file's database. */
  const base = () => ({ database: { url: tdb.url }, schema: `weft_${++schemas}`, timerPollInterval: 50, shutdownGracePeriod: 0 });
  async function boot(metadata: ModuleMetadata, setup?: (app: INestApplication) => void) {
    const moduleRef = await Test.createTestingModule({
      ...metadata,
      providers: [GateWorkflow, BoomWorkflow, ParentOfBoomWorkflow, ...(metadata.providers ?? [])],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    apps.push(app);
    setup?.(app);
    await app.init();
    const http = request(app.getHttpServer());
    return { app, http, engine: app.get(WeftEngine) };
  }

  describe('http.guards (a class and an instance) on every route', () => {
    let app: INestApplication;
    let http: ReturnType<typeof request>;
    let engine: WeftEngine;
    let routes: Route[];

    beforeAll(async () => {
      ({ app, http, engine } = await boot({
        imports: [WeftModule.forRoot({ ...base(), http: { guards: [HeaderAGuard, headerBGuard] }, metrics: true, dashboard: true })],
      }));
      await engine.start('gate', null, { workflowId: 'gate-1' });
      routes = weftRoutes(app);
    });

    it('enumerates the routes: the workflow API, the messages, the dashboard and /metrics, and Express serves no others', () => {
      expect(routes.length).toBeGreaterThanOrEqual(17);
      expect(routes).toEqual(
        expect.arrayContaining([
          { method: 'POST', path: '/weft/workflows' },
          { method: 'GET', path: '/weft/workflows/:id' },
          { method: 'POST', path: '/weft/workflows/:id/cancel' },
          { method: 'POST', path: '/weft/workflows/:id/signal/:name' },
          { method: 'GET', path: '/weft/workflows/:id/ownership' },
          { method: 'GET', path: '/weft/workflows/:id/timeline' },
          { method: 'GET', path: '/weft/engines' },
          { method: 'GET', path: '/weft/queues/:name/partitions' },
          { method: 'GET', path: '/weft' },
          { method: 'GET', path: '/weft/dashboard/:file' },
          { method: 'GET', path: '/metrics' },
        ]),
      );
      expect(expressRoutes(app)).toEqual(routes);
    });

    it('refuses every route without credentials (401 from the class guard) and with half of them (403)', async () => {
      for (const route of routes) {
        const none = await send(http, route, {});
        expect([route, none.status]).toEqual([route, 401]);
        const half = await send(http, route, { 'x-a': 'yes' });
        expect([route, half.status, half.body]).toEqual([route, 403, expect.objectContaining({ statusCode: 403 })]);
      }
      // Nothing reached the engine: no workflow started, the gate still running.
      expect((await engine.list()).items.map((w) => [w.workflowId, w.status])).toEqual([['gate-1', 'running']]);
    });

    it('accepts every route when both guards pass', async () => {
      for (const route of routes) {
        const res = await send(http, route, { 'x-a': 'yes', 'x-b': 'yes' });
        // The handler answered: a success, or its own 4xx for the empty body / the gate's state.
        expect([route, res.status < 500 && res.status !== 401 && res.status !== 403]).toEqual([route, true]);
      }
      await http.get('/weft/workflows/gate-1').set({ 'x-a': 'yes', 'x-b': 'yes' }).expect(200);
      await http.get('/metrics').set({ 'x-a': 'yes', 'x-b': 'yes' }).expect(200);
      await http
        .get('/weft')
        .set({ 'x-a': 'yes', 'x-b': 'yes' })
        .expect(200)
        .expect('content-type', /text\/html/);
      await http
        .get('/weft/dashboard/app.js')
        .set({ 'x-a': 'yes', 'x-b': 'yes' })
        .expect(200)
        .expect('content-type', /javascript/);
    });
  });

  describe("the app's global guards", () => {
    it('APP_GUARD applies to Weft routes, alongside http.guards', async () => {
      const { app, http } = await boot({
        imports: [WeftModule.forRoot({ ...base(), http: { guards: [HeaderAGuard] }, metrics: true })],
        providers: [{ provide: APP_GUARD, useClass: GlobalGuard }],
      });
      for (const route of weftRoutes(app)) {
        expect([route, (await send(http, route, { 'x-a': 'yes' })).status]).toEqual([route, 403]); // the global guard refuses
        expect([route, (await send(http, route, { 'x-global': 'yes' })).status]).toEqual([route, 401]); // Weft's refuses
      }
      await http.get('/weft/workflows').set({ 'x-a': 'yes', 'x-global': 'yes' }).expect(200);
    });

    it('app.useGlobalGuards applies to Weft routes with no http.guards', async () => {
      // The dashboard turns the HTTP API on by itself (no `http` given), with no guards of its own.
      const { app, http } = await boot({ imports: [WeftModule.forRoot({ ...base(), metrics: true, dashboard: true })] }, (a) =>
        a.useGlobalGuards(new GlobalGuard()),
      );
      const routes = weftRoutes(app);
      expect(routes.length).toBeGreaterThanOrEqual(17);
      expect(routes).toEqual(expect.arrayContaining([{ method: 'GET', path: '/weft' }]));
      for (const route of routes) expect([route, (await send(http, route, {})).status]).toEqual([route, 403]);
      await http.get('/weft/workflows').set('x-global', 'yes').expect(200);
      await http.get('/metrics').set('x-global', 'yes').expect(200);
    });
  });

  describe('guard classes resolved by dependency injection', () => {
    it('a guard injecting ConfigService (global ConfigModule) and WeftEngine; metrics.guards: [] leaves /metrics open', async () => {
      const { http } = await boot({
        imports: [
          ConfigModule.forRoot({ isGlobal: true, ignoreEnvFile: true, load: [() => ({ WEFT_TEST_KEY: 'from-config' })] }),
          WeftModule.forRoot({ ...base(), http: { guards: [ConfiguredKeyGuard] }, metrics: { guards: [] } }),
        ],
      });
      await http.get('/weft/workflows').expect(403);
      await http.get('/weft/workflows').set('x-key', 'wrong').expect(403);
      await http.get('/weft/workflows').set('x-key', 'from-config').expect(200);
      await http.get('/metrics').expect(200);
    });

    it('a guard injecting a token of a module given to forRootAsync({ imports })', async () => {
      const { http } = await boot({
        imports: [
          WeftModule.forRootAsync({ imports: [KeysModule], useFactory: () => base(), http: { guards: [ImportedKeyGuard] }, metrics: true }),
        ],
      });
      await http.get('/weft/workflows').expect(403);
      await http.get('/metrics').expect(403); // http.guards guard /metrics by default
      await http.get('/weft/workflows').set('x-key', 'from-keys-module').expect(200);
      await http.get('/metrics').set('x-key', 'from-keys-module').expect(200);
    });
  });

  describe('error stacks of failed workflows', () => {
    async function failed(http: ReturnType<typeof request>, headers: Record<string, string> = {}) {
      await http.post('/weft/workflows').set(headers).send({ type: 'boom', workflowId: 'boom-1' }).expect(201);
      const result = (await http.get('/weft/workflows/boom-1/result?timeout=10s').set(headers).expect(200)).body;
      const described = (await http.get('/weft/workflows/boom-1').set(headers).expect(200)).body;
      return { result, described, op: described.history[0] };
    }

    it('with no guard: name and message only, in /result, the description and its history', async () => {
      const { result, described, op } = await failed((await boot({ imports: [WeftModule.forRoot({ ...base(), http: true })] })).http);
      expect(result).toMatchObject({
        done: true,
        status: 'failed',
        error: { name: 'StepFailedError', message: expect.stringContaining('kaboom') },
      });
      expect(described.status).toBe('failed');
      expect(described.error).toMatchObject({ name: 'StepFailedError' });
      expect(op).toMatchObject({ name: 'explode', status: 'failed', error: { name: 'Error', message: 'kaboom' } });
      expect(JSON.stringify([result, described])).not.toContain('stack');
    });

    it.each([
      ['no guard', { http: true }, {}],
      ['http.exposeErrorStacks: false behind guards', { http: { guards: [HeaderAGuard], exposeErrorStacks: false } }, { 'x-a': 'yes' }],
    ])(
      "with %s: a failed child's recorded error carries no stack in the parent's description, timeline and result",
      async (_what, extras, headers) => {
        const { http } = await boot({ imports: [WeftModule.forRoot({ ...base(), ...extras })] });
        await http.post('/weft/workflows').set(headers).send({ type: 'parent-of-boom', workflowId: 'parent-1' }).expect(201);
        const result = (await http.get('/weft/workflows/parent-1/result?timeout=10s').set(headers).expect(200)).body;
        expect(result).toMatchObject({ done: true, status: 'completed', output: { caught: 'ChildWorkflowFailedError' } });
        const described = (await http.get('/weft/workflows/parent-1').set(headers).expect(200)).body;
        const timeline = (await http.get('/weft/workflows/parent-1/timeline').set(headers).expect(200)).body;
        // The child's failure is there (name and message), in history[].result, operations[].result and messages[].payload.
        const childOp = described.history.find((op: { kind: string }) => op.kind === 'childResult');
        expect(JSON.stringify(childOp.result)).toContain('kaboom');
        expect(JSON.stringify(timeline.operations)).toContain('kaboom');
        expect(JSON.stringify(timeline.messages)).toContain('kaboom');
        for (const body of [result, described, timeline]) {
          const text = JSON.stringify(body);
          expect(text).not.toContain('"stack"');
          expect(text).not.toContain(process.cwd()); // no file path of the code that threw
        }
      },
    );

    it('with http.exposeErrorStacks: true and no guard: stacks sent', async () => {
      const { http } = await boot({ imports: [WeftModule.forRoot({ ...base(), http: { exposeErrorStacks: true } })] });
      const { result, described, op } = await failed(http);
      expect(result.error.stack).toContain('StepFailedError');
      expect(described.error.stack).toContain('StepFailedError');
      expect(op.error.stack).toContain('kaboom');
    });

    it('behind http.guards: stacks sent', async () => {
      const { http } = await boot({ imports: [WeftModule.forRoot({ ...base(), http: { guards: [HeaderAGuard] } })] });
      const { described, op } = await failed(http, { 'x-a': 'yes' });
      expect(described.error.stack).toEqual(expect.any(String));
      expect(op.error.stack).toContain('kaboom');
    });

    it('behind guards with http.exposeErrorStacks: false: none', async () => {
      const { http } = await boot({
        imports: [WeftModule.forRoot({ ...base(), http: { guards: [HeaderAGuard], exposeErrorStacks: false } })],
      });
      const { result, described } = await failed(http, { 'x-a': 'yes' });
      expect(JSON.stringify([result, described])).not.toContain('stack');
    });
  });

  describe('the options are validated when the module is defined', () => {
    class NotAGuard {}
    it.each([
      ['guards not an array', { http: { guards: HeaderAGuard } }, 'http.guards'],
      ['a guard without canActivate', { http: { guards: [{}] } }, 'http.guards'],
      ['a class that is not a guard', { http: { guards: [NotAGuard] } }, 'http.guards'],
      ['a null guard', { http: { guards: [null] } }, 'http.guards'],
      ['a misspelt key', { http: { gaurds: [HeaderAGuard] } }, 'http'],
      ['exposeErrorStacks not a boolean', { http: { exposeErrorStacks: 'yes' } }, 'http.exposeErrorStacks'],
      ['metrics.guards not an array', { metrics: { guards: headerBGuard } }, 'metrics.guards'],
      ['a misspelt dashboard key', { dashboard: { pth: 'ops' } }, 'dashboard'],
      ['the dashboard without its API', { dashboard: true, http: false }, 'dashboard'],
      ['a dashboard path over the API', { dashboard: { path: 'weft/workflows' } }, 'dashboard.path'],
    ])('%s: InvalidConfigurationError', (_what, extras, option) => {
      expect(() => WeftModule.forRoot({ ...(extras as object) })).toThrow(
        expect.objectContaining({ code: 'WEFT_INVALID_CONFIGURATION', option }),
      );
      expect(() => WeftModule.forRootAsync({ useFactory: () => ({}), ...(extras as object) })).toThrow(
        expect.objectContaining({ code: 'WEFT_INVALID_CONFIGURATION', option }),
      );
    });
  });
});
