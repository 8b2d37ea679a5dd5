import 'reflect-metadata';
import { Injectable, Provider, Scope } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  DuplicateHandlerNameError,
  DuplicateWorkflowNameError,
  InvalidWorkflowDeclarationError,
  QueryHandler,
  ScopedWorkflowError,
  SignalHandler,
  WeftEngine,
  WeftError,
  WeftModule,
  Workflow,
  WorkflowRunMissingError,
} from '@weft/nest';
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

  it('rejects a @Workflow class without run()', async () => {
    const { error } = await boot([NoRunWorkflow]);
    expect(error).toBeInstanceOf(WorkflowRunMissingError);
    expect((error as Error).message).toContain('NoRunWorkflow');
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

  it('every start-up error is a WeftError with a stable code', async () => {
    const { error } = await boot([NoRunWorkflow]);
    expect(error).toBeInstanceOf(WeftError);
    expect((error as WeftError).code).toBe('WEFT_WORKFLOW_RUN_MISSING');
  });
});
