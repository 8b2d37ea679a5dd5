// A port of Temporal's samples-typescript `message-passing/introduction` sample and its test to
// Weft, on @weft/nest/testing: a greeting workflow with a query (with and without arguments), a
// signal that approves its release, a synchronous update with a validator (setLanguage), and an
// async update that calls an activity, here a @Step provider, to learn a language the workflow
// does not know (setLanguageUsingActivity). The sample's lock (async-mutex) that keeps concurrent
// calls of the async update in order is a condition on workflow state here (docs/messages.md).
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  ApplicationError,
  QueryHandler,
  SignalHandler,
  Step,
  UpdateHandler,
  UpdateRejectedError,
  UpdateValidator,
  Workflow,
  type WorkflowContext,
} from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';

enum Language {
  ARABIC = 'ARABIC',
  CHINESE = 'CHINESE',
  ENGLISH = 'ENGLISH',
  FRENCH = 'FRENCH',
  HINDI = 'HINDI',
  PORTUGUESE = 'PORTUGUESE',
  SPANISH = 'SPANISH',
}

/** The sample's activity: the remote greeting service knows more languages. */
@Injectable()
class GreetingService {
  calls = 0;
  @Step({ name: 'call-greeting-service' })
  async callGreetingService(toLanguage: Language): Promise<string | undefined> {
    this.calls++;
    const greetings: Record<Language, string> = {
      [Language.ENGLISH]: 'Hello, world',
      [Language.CHINESE]: '你好，世界',
      [Language.FRENCH]: 'Bonjour, monde',
      [Language.SPANISH]: 'Hola mundo',
      [Language.PORTUGUESE]: 'Olá mundo',
      [Language.ARABIC]: 'مرحبا بالعالم',
      [Language.HINDI]: 'नमस्ते दुनिया',
    };
    await new Promise((resolve) => setTimeout(resolve, 200)); // the sample's simulated network call
    return greetings[toLanguage];
  }
}

@Workflow('greeting')
class GreetingWorkflow {
  declare ctx: WorkflowContext;
  // Built in: two languages only (the remote service knows more).
  private readonly greetings: Partial<Record<Language, string>> = {
    [Language.CHINESE]: '你好，世界',
    [Language.ENGLISH]: 'Hello, world',
  };
  private approvedForRelease = false;
  private approverName: string | undefined;
  private language = Language.ENGLISH;
  private locked = false;

  constructor(private readonly service: GreetingService) {}

  async run(): Promise<string> {
    await this.ctx.condition(() => this.approvedForRelease);
    return this.greetings[this.language]!;
  }

  @QueryHandler('getLanguages')
  getLanguages(input: { includeUnsupported: boolean }): Language[] {
    return input.includeUnsupported ? Object.values(Language) : (Object.keys(this.greetings) as Language[]);
  }

  @SignalHandler('approve')
  approve(input: { name: string }): void {
    this.approvedForRelease = true;
    this.approverName = input.name;
  }

  @UpdateHandler('setLanguage')
  setLanguage(newLanguage: Language): Language {
    const previousLanguage = this.language;
    this.language = newLanguage;
    return previousLanguage;
  }

  @UpdateValidator('setLanguage')
  validateLanguage(newLanguage: Language): void {
    if (!(newLanguage in this.greetings)) throw new ApplicationError(`${newLanguage} is not supported`);
  }

  @QueryHandler('getLanguage')
  getLanguage(): Language {
    return this.language;
  }

  /** Async: it calls the service (a recorded step), one call at a time. */
  @UpdateHandler('setLanguageUsingActivity')
  async setLanguageUsingActivity(newLanguage: Language): Promise<Language> {
    if (!(newLanguage in this.greetings)) {
      await this.ctx.condition(() => !this.locked);
      this.locked = true;
      try {
        if (!(newLanguage in this.greetings)) {
          const greeting = await this.service.callGreetingService(newLanguage);
          // A validator cannot call the service: the update fails here, after it was accepted.
          if (!greeting) throw new ApplicationError(`${newLanguage} is not supported by the greeting service`);
          this.greetings[newLanguage] = greeting;
        }
      } finally {
        this.locked = false;
      }
    }
    const previousLanguage = this.language;
    this.language = newLanguage;
    return previousLanguage;
  }

  @QueryHandler('approver')
  approver(): string | undefined {
    return this.approverName;
  }
}

@Module({ providers: [GreetingService, GreetingWorkflow] })
class GreetingModule {}

describe("Temporal's message-passing introduction sample on the Weft testing kit", () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;
  let n = 0;
  const start = async () => (await env.start('greeting', null, { workflowId: `greeting-${process.pid}-${++n}` })).workflowId;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(), GreetingModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
  });
  afterEach(async () => app?.close());

  it('can be queried for supported languages', async () => {
    const id = await start();
    const supportedLanguages = await env.engine.query(id, 'getLanguages', { includeUnsupported: false });
    expect(supportedLanguages).toEqual([Language.CHINESE, Language.ENGLISH]);
    await env.signal(id, 'approve', { name: 'test-approver' });
    expect(await env.result(id, { timeout: '10s' })).toBe('Hello, world');
  });

  it('can be queried for unsupported language', async () => {
    const id = await start();
    const allLanguages = await env.engine.query(id, 'getLanguages', { includeUnsupported: true });
    expect(allLanguages).toEqual([
      Language.ARABIC,
      Language.CHINESE,
      Language.ENGLISH,
      Language.FRENCH,
      Language.HINDI,
      Language.PORTUGUESE,
      Language.SPANISH,
    ]);
    await env.signal(id, 'approve', { name: 'test-approver' });
    expect(await env.result(id, { timeout: '10s' })).toBe('Hello, world');
  });

  it('can be updated to change the language', async () => {
    const id = await start();
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.ENGLISH);
    await env.engine.update(id, 'setLanguage', Language.CHINESE, { timeout: '10s' });
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.CHINESE);
    await env.signal(id, 'approve', { name: 'test-approver' });
    expect(await env.result(id, { timeout: '10s' })).toBe('你好，世界');
  });

  it('rejects an invalid language', async () => {
    const id = await start();
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.ENGLISH);
    // Temporal's client throws WorkflowUpdateFailedError for a validator's rejection; Weft's
    // typed error for it is UpdateRejectedError, and the rejected update leaves no history.
    const err = await env.engine.update(id, 'setLanguage', Language.PORTUGUESE, { timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpdateRejectedError);
    expect((err as Error).message).toContain('PORTUGUESE is not supported');
    expect((await env.history(id)).filter((op) => op.kind === 'update')).toEqual([]);
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.ENGLISH);
    await env.signal(id, 'approve', { name: 'test-approver' });
    expect(await env.result(id, { timeout: '10s' })).toBe('Hello, world');
  });

  it('can be updated to change the language using an activity', async () => {
    const id = await start();
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.ENGLISH);
    expect(await env.engine.update(id, 'setLanguageUsingActivity', Language.PORTUGUESE, { timeout: '10s' })).toBe(Language.ENGLISH);
    expect(await env.engine.query(id, 'getLanguage')).toBe(Language.PORTUGUESE);
    await env.signal(id, 'approve', { name: 'test-approver' });
    expect(await env.result(id, { timeout: '10s' })).toBe('Olá mundo');
    expect(app.get(GreetingService).calls).toBe(1);
    expect((await env.history(id)).filter((op) => op.kind === 'step').map((op) => op.name)).toEqual(['call-greeting-service']);
  });
});
