import 'reflect-metadata';
import { CanActivate, Injectable, Provider, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DuplicateHandlerNameError,
  DuplicateWorkflowNameError,
  InvalidWorkflowDeclarationError,
  ModuleOptionMisplacedError,
  QueryHandler,
  Schedule,
  ScopedWorkflowError,
  SignalHandler,
  UpdateHandler,
  UpdateValidator,
  Step,
  WeftEngine,
  WeftError,
  WeftMetrics,
  WeftModule,
  WeftModuleOptions,
  Workflow,
  WorkflowRunMissingError,
} from '@weft/nest';
import type { Duration } from '@weft/nest';
import { Registry } from 'prom-client';
import { createTestDatabase, TestDatabase } from './support/database.js';

@Workflow('same-name')
class FirstWorkflow {
  async run() {
    return 1;
  }
}

@Workflow('same-name')
class SecondWorkflow {
  async run() {
    return 2;
  }
}

@Workflow('handlers')
class TwoHandlersWorkflow {
  async run() {
    return null;
  }
  @SignalHandler('approve') first() {}
  @SignalHandler('approve') second() {}
  // Same name, another kind: allowed.
  @QueryHandler('approve') query() {
    return true;
  }
}

@Workflow('no-run')
class NoRunWorkflow {
  execute() {
    return null;
  }
}

@Injectable({ scope: Scope.REQUEST })
@Workflow('request-scoped')
class RequestScopedWorkflow {
  async run() {
    return null;
  }
}

@Injectable({ scope: Scope.REQUEST })
class PerRequestService {}

@Workflow('orphan-validator')
class OrphanValidatorWorkflow {
  private limit = 0;
  async run() {
    return this.limit;
  }

  @UpdateHandler('set-limit')
  async setLimit(n: number) {
    this.limit = n;
    return n;
  }

  @UpdateValidator('set-limt')
  checkLimit(n: unknown) {
    if (typeof n !== 'number') throw new TypeError('a number');
  }
}

@Workflow('depends-on-request')
class DependsOnRequestWorkflow {
  constructor(readonly perRequest: PerRequestService) {}
  async run() {
    return null;
  }
}

@Workflow('')
class EmptyNameWorkflow {
  async run() {
    return null;
  }
}

@Workflow('bad-cron')
@Schedule({ id: 'fine', every: '1h' })
@Schedule({ id: 'broken', cron: 'not a cron' })
class BadCronWorkflow {
  async run() {
    return null;
  }
}

@Workflow('bad-every')
@Schedule({ id: 'too-often', every: '10ms' })
class BadEveryWorkflow {
  async run() {
    return null;
  }
}

@Workflow('bad-window')
@Schedule({ id: 'window', every: '1h', catchupWindow: 'soon' as Duration })
class BadWindowWorkflow {
  async run() {
    return null;
  }
}

describe('WeftModule start-up errors', () => {
  let tdb: TestDatabase;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_startup');
  });
  afterAll(async () => {
    await tdb?.drop();
  });

  /** Boots an app with these providers; returns the init error and the engine it had created. */
  async function boot(providers: Provider[]): Promise<{ error: unknown; engine: WeftEngine }> {
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0 })],
      providers,
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    const engine = app.get(WeftEngine);
    const error = await app.init().then(
      () => null,
      (err: unknown) => err,
    );
    await app.close();
    return { error, engine };
  }

  it('rejects two workflows with the same name, naming both classes, and disposes the engine', async () => {
    const { error, engine } = await boot([FirstWorkflow, SecondWorkflow]);
    expect(error).toBeInstanceOf(DuplicateWorkflowNameError);
    expect(error).toMatchObject({ code: 'WEFT_DUPLICATE_WORKFLOW_NAME', workflowName: 'same-name' });
    expect((error as Error).message).toContain('FirstWorkflow');
    expect((error as Error).message).toContain('SecondWorkflow');
    expect(engine.isDisposed).toBe(true);
    expect(engine.registry.names()).toEqual([]); // all or nothing
  });

  it('rejects two handlers of one kind with the same name', async () => {
    const { error } = await boot([TwoHandlersWorkflow]);
    expect(error).toBeInstanceOf(DuplicateHandlerNameError);
    expect(error).toMatchObject({
      code: 'WEFT_DUPLICATE_HANDLER_NAME',
      className: 'TwoHandlersWorkflow',
      kind: 'signal',
      handlerName: 'approve',
      methodNames: ['first', 'second'],
    });
  });

  it('rejects an @UpdateValidator of an update the class does not handle, naming the class and the method', async () => {
    const { error, engine } = await boot([OrphanValidatorWorkflow]);
    expect(error).toBeInstanceOf(InvalidWorkflowDeclarationError);
    expect(error).toMatchObject({ code: 'WEFT_INVALID_WORKFLOW_DECLARATION', className: 'OrphanValidatorWorkflow' });
    expect((error as Error).message).toContain('@UpdateValidator on checkLimit() validates update "set-limt", which has no @UpdateHandler');
    expect(engine.isDisposed).toBe(true);
  });

  it('rejects a @Workflow class without run()', async () => {
    const { error } = await boot([NoRunWorkflow]);
    expect(error).toBeInstanceOf(WorkflowRunMissingError);
    expect(error).toMatchObject({ code: 'WEFT_WORKFLOW_RUN_MISSING', className: 'NoRunWorkflow' });
    expect((error as Error).message).toContain('NoRunWorkflow is decorated with @Workflow but has no run(ctx, input) method. Add');
  });

  it('rejects a request-scoped workflow class', async () => {
    const { error } = await boot([RequestScopedWorkflow]);
    expect(error).toBeInstanceOf(ScopedWorkflowError);
    expect(error).toMatchObject({ code: 'WEFT_WORKFLOW_SCOPE', className: 'RequestScopedWorkflow' });
  });

  it('rejects a workflow class made request-scoped by a dependency', async () => {
    const { error } = await boot([PerRequestService, DependsOnRequestWorkflow]);
    expect(error).toBeInstanceOf(ScopedWorkflowError);
    expect(error).toMatchObject({ className: 'DependsOnRequestWorkflow' });
  });

  it('rejects an empty workflow name', async () => {
    const { error } = await boot([EmptyNameWorkflow]);
    expect(error).toBeInstanceOf(InvalidWorkflowDeclarationError);
    expect((error as Error).message).toContain('EmptyNameWorkflow');
  });

  it.each([
    [BadCronWorkflow, 'BadCronWorkflow @Schedule({ id: "broken", ... }): Invalid schedule cron', 'WEFT_INVALID_ARGUMENT'],
    [BadEveryWorkflow, 'BadEveryWorkflow @Schedule({ id: "too-often", ... }): Invalid schedule every', 'WEFT_INVALID_ARGUMENT'],
    [BadWindowWorkflow, 'BadWindowWorkflow @Schedule({ id: "window", ... }): ', 'WEFT_INVALID_DURATION'],
  ])('rejects a bad @Schedule naming the class and the schedule, before registering anything (%o)', async (cls, start, code) => {
    const { error, engine } = await boot([FirstWorkflow, cls]);
    expect(error).toBeInstanceOf(WeftError);
    expect(error).toMatchObject({ code });
    expect((error as Error).message.startsWith(start)).toBe(true);
    expect((error as Error).message).toMatch(/Fix the decorator's options \(docs\/schedules\.md\)\.$/);
    expect(engine.isDisposed).toBe(true);
    expect(engine.registry.names()).toEqual([]);
  });

  it('rejects @Step() on something that is not a method, when the class is declared', () => {
    class Accessors {
      get value() {
        return 1;
      }
    }
    const descriptor = Object.getOwnPropertyDescriptor(Accessors.prototype, 'value')!;
    const error = (() => {
      try {
        Step()(Accessors.prototype, 'value', descriptor);
        return null;
      } catch (err) {
        return err;
      }
    })();
    expect(error).toBeInstanceOf(InvalidWorkflowDeclarationError);
    expect(error).toMatchObject({ code: 'WEFT_INVALID_WORKFLOW_DECLARATION', className: 'Accessors' });
    expect((error as Error).message).toContain('Put @Step() on a method');
  });

  it('rejects a name already registered on the engine directly', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', shutdownGracePeriod: 0 })],
      providers: [FirstWorkflow],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    app.get(WeftEngine).register({ name: 'same-name', factory: () => new SecondWorkflow() });
    await expect(app.init()).rejects.toThrow(DuplicateWorkflowNameError);
    await app.close();
  });

  describe("forRootAsync: http and metrics in the factory's result", () => {
    class AllowAllGuard implements CanActivate {
      canActivate() {
        return true;
      }
    }
    const base = () => ({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, shutdownGracePeriod: 0 });
    const compile = (async: Parameters<typeof WeftModule.forRootAsync>[0]) =>
      Test.createTestingModule({ imports: [WeftModule.forRootAsync(async)] }).compile();

    it.each([
      ['http with guards', { http: { guards: [AllowAllGuard] } }, {}, ['http'], true],
      ['http: true', { http: true }, {}, ['http'], false],
      ['metrics with guards, http beside useFactory', { metrics: { guards: [] } }, { http: true, metrics: true }, ['metrics'], true],
      [
        'both, an equal copy of what is beside useFactory',
        { http: { prefix: 'ops' }, metrics: true },
        { http: { prefix: 'ops' } },
        ['http', 'metrics'],
        false,
      ],
    ] as Array<[string, Partial<WeftModuleOptions>, object, string[], boolean]>)(
      '%s: start-up fails with WEFT_MODULE_OPTION_MISPLACED, saying to move them beside useFactory',
      async (_what, returned, extras, options, hadGuards) => {
        const error = await compile({ useFactory: () => ({ ...base(), ...returned }), ...extras }).then(
          () => null,
          (err: unknown) => err,
        );
        expect(error).toBeInstanceOf(ModuleOptionMisplacedError);
        expect(error).toMatchObject({ code: 'WEFT_MODULE_OPTION_MISPLACED', options, hadGuards });
        const message = (error as Error).message;
        expect(message.startsWith('WEFT_MODULE_OPTION_MISPLACED: ')).toBe(true);
        expect(message).toContain(`beside useFactory: WeftModule.forRootAsync({ ${options.join(', ')}, useFactory })`);
      },
    );

    it('the very value given beside useFactory, and metrics: { registry } alone, are accepted', async () => {
      const http = { guards: [AllowAllGuard] };
      const registry = new Registry();
      const moduleRef = await compile({ useFactory: () => ({ ...base(), http, metrics: { registry } }), http });
      const app = moduleRef.createNestApplication({ logger: false });
      await app.init();
      expect(app.get(WeftMetrics).registry).toBe(registry);
      await app.close();
    });
  });

  it('every start-up error is a WeftError with a stable code', async () => {
    const { error } = await boot([NoRunWorkflow]);
    expect(error).toBeInstanceOf(WeftError);
    expect((error as WeftError).code).toBe('WEFT_WORKFLOW_RUN_MISSING');
  });
});
