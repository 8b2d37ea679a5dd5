// A port of Temporal's samples-typescript `saga` sample to Weft, on @weft/nest/testing. Opening
// an account adds an address, a client and a bank account, each a step of its bounded context;
// when one fails for good (after its retries), the steps done so far are undone, newest first,
// and the workflow fails with the step's error. The sample ships no test: these cases check what
// its README describes, with the retries' backoff on workflow time, moved by the test's clock
// (docs/testing.md), so the 70 s of backoff take no real waiting.
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { StepFailedError, Step, Workflow, WorkflowFailedError, type StepOptions, type WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule, weftMatchers, type WeftMatchers, type WeftTestingModuleOptions } from '@weft/nest/testing';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Assertion<T> extends WeftMatchers<T> {}
}
expect.extend(weftMatchers);

// The sample bounds its activities in time, by schedule-to-close (3 s, 8 s of retrying): here by
// retry.maxElapsed, counted on workflow time, with a backoff long enough that real time never
// reaches a retry during a test (the test's clock moves it). With the backoff's jitter (each delay
// between half and all of 10 s, 20 s, 40 s, 80 s), 32 s leaves room for exactly 3 attempts and 72 s
// for exactly 4, the counts the sample's README shows.
const DEFAULT_STEP: StepOptions = { retry: { maxElapsed: '32s', initialInterval: '10s', backoffCoefficient: 2 } };
const LONG_RUNNING_STEP: StepOptions = { retry: { maxElapsed: '72s', initialInterval: '10s', backoffCoefficient: 2, maxInterval: '80s' } };

interface OpenAccount {
  accountId: string;
  address: { address1: string; postalCode: string };
  clientEmail: string;
  bankDetails: { accountNumber: string; routingNumber: string; accountType: string };
  /** The sample's `shouldThrow`: the step of that name throws this message on every attempt. */
  shouldThrow?: { createAccount?: string; addBankAccount?: string };
}

/** What the fake bounded contexts were asked to do, in order (the sample logs it). */
@Injectable()
class Calls {
  readonly made: string[] = [];
}

function fakeCall(calls: Calls, name: string, shouldThrow?: string): void {
  calls.made.push(name);
  if (shouldThrow) throw new Error(shouldThrow);
}

@Injectable()
class AccountsClient {
  constructor(private readonly calls: Calls) {}

  @Step({ name: 'create-account', ...DEFAULT_STEP })
  async createAccount(p: { accountId: string; shouldThrow?: string }): Promise<void> {
    fakeCall(this.calls, 'create-account', p.shouldThrow);
  }
}

@Injectable()
class PostOfficeClient {
  constructor(private readonly calls: Calls) {}

  @Step({ name: 'add-address', ...DEFAULT_STEP })
  async addAddress(p: { accountId: string; address: OpenAccount['address'] }): Promise<void> {
    void p;
    fakeCall(this.calls, 'add-address');
  }

  @Step({ name: 'clear-postal-addresses', ...DEFAULT_STEP })
  async clearPostalAddresses(p: { accountId: string }): Promise<void> {
    void p;
    fakeCall(this.calls, 'clear-postal-addresses');
  }
}

@Injectable()
class ClientsClient {
  constructor(private readonly calls: Calls) {}

  @Step({ name: 'add-client', ...DEFAULT_STEP })
  async addClient(p: { accountId: string; clientEmail: string }): Promise<void> {
    void p;
    fakeCall(this.calls, 'add-client');
  }

  @Step({ name: 'remove-client', ...DEFAULT_STEP })
  async removeClient(p: { accountId: string }): Promise<void> {
    void p;
    fakeCall(this.calls, 'remove-client');
  }
}

@Injectable()
class BankingClient {
  constructor(private readonly calls: Calls) {}

  @Step({ name: 'add-bank-account', ...LONG_RUNNING_STEP })
  async addBankAccount(p: { accountId: string; details: OpenAccount['bankDetails']; shouldThrow?: string }): Promise<void> {
    fakeCall(this.calls, 'add-bank-account', p.shouldThrow);
  }

  @Step({ name: 'disconnect-bank-accounts', ...DEFAULT_STEP })
  async disconnectBankAccounts(p: { accountId: string }): Promise<void> {
    void p;
    fakeCall(this.calls, 'disconnect-bank-accounts');
  }
}

interface Compensation {
  message: string;
  fn: () => Promise<void>;
}

@Workflow('open-account')
class OpenAccountWorkflow {
  constructor(
    private readonly accounts: AccountsClient,
    private readonly postOffice: PostOfficeClient,
    private readonly clients: ClientsClient,
    private readonly banking: BankingClient,
  ) {}

  async run(ctx: WorkflowContext, params: OpenAccount): Promise<void> {
    const compensations: Compensation[] = [];
    const { accountId } = params;
    try {
      await this.accounts.createAccount({ accountId, shouldThrow: params.shouldThrow?.createAccount });
    } catch (err) {
      ctx.logger.error('creating account failed. stopping.');
      throw err; // nothing done yet: nothing to undo
    }
    try {
      await this.postOffice.addAddress({ accountId, address: params.address });
      compensations.unshift({ message: 'reversing add address', fn: () => this.postOffice.clearPostalAddresses({ accountId }) });
      await this.clients.addClient({ accountId, clientEmail: params.clientEmail });
      compensations.unshift({ message: 'reversing add client', fn: () => this.clients.removeClient({ accountId }) });
      await this.banking.addBankAccount({ accountId, details: params.bankDetails, shouldThrow: params.shouldThrow?.addBankAccount });
      compensations.unshift({ message: 'reversing add bank account', fn: () => this.banking.disconnectBankAccounts({ accountId }) });
    } catch (err) {
      ctx.logger.error(err instanceof StepFailedError ? err.cause.message : 'error while opening account');
      await compensate(ctx, compensations);
      throw err;
    }
  }
}

/** Each compensation in turn; one that fails is logged and the rest still run (the sample swallows them). */
async function compensate(ctx: WorkflowContext, compensations: Compensation[]): Promise<void> {
  if (compensations.length === 0) return;
  ctx.logger.log('failures encountered during account opening - compensating');
  for (const c of compensations) {
    try {
      ctx.logger.error(c.message);
      await c.fn();
    } catch (err) {
      ctx.logger.error(`failed to compensate: ${(err as Error).message}`);
    }
  }
}

@Module({ providers: [Calls, AccountsClient, PostOfficeClient, ClientsClient, BankingClient, OpenAccountWorkflow] })
class SagaModule {}

/** The names in a failure's cause chain below WorkflowFailedError; the last with its message. */
function causes(failure: unknown): string[] {
  const out: string[] = [];
  for (let e = (failure as Error).cause as Error | undefined; e; e = e.cause as Error | undefined) {
    out.push(e.cause ? e.name : `${e.name}: ${e.message}`);
  }
  return out;
}

const openAccount = (accountId: string, shouldThrow?: OpenAccount['shouldThrow']): OpenAccount => ({
  accountId,
  address: { address1: '123 Temporal Street', postalCode: '98006' },
  clientEmail: 'bart@simpson.io',
  bankDetails: { accountNumber: `${accountId}-n`, routingNumber: '1234555', accountType: 'Checking' },
  shouldThrow,
});

describe("Temporal's saga sample on the Weft testing kit", () => {
  let app: INestApplication | undefined;
  let env: WeftTestEnvironment;
  let calls: string[];
  let n = 0;
  const accountId = () => `acct-${process.pid}-${++n}`;

  async function boot(opts: WeftTestingModuleOptions = {}): Promise<void> {
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(opts), SagaModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
    calls = app.get(Calls).made;
  }
  afterEach(async () => {
    await app?.close();
    app = undefined;
  });

  it('undoes the address and the client, newest first, when adding the bank account keeps failing', async () => {
    await boot();
    const start = env.clock.now().getTime();
    const h = await env.start('open-account', openAccount(accountId(), { addBankAccount: 'add bank account failed' }));
    await env.clock.settle();
    expect(calls).toEqual(['create-account', 'add-address', 'add-client', 'add-bank-account']);
    expect(await h.status()).toBe('running'); // waiting out the first backoff (5 to 10 s)

    // Each retry comes when workflow time reaches it: 5-10 s, then 10-20 s, then 20-40 s.
    await env.clock.advance('10s');
    expect(calls.filter((c) => c === 'add-bank-account')).toHaveLength(2);
    await env.clock.advance('20s');
    expect(calls.filter((c) => c === 'add-bank-account')).toHaveLength(3);
    expect(calls).not.toContain('remove-client');
    await env.clock.advance('40s');

    expect(calls.slice(3)).toEqual([
      'add-bank-account',
      'add-bank-account',
      'add-bank-account',
      'add-bank-account',
      'remove-client',
      'clear-postal-addresses',
    ]);
    const failure = await env.result(h.workflowId).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    // Its time bound ran out: the step failed with StepMaxElapsedError, whose cause is the last attempt's error.
    expect(causes(failure)).toEqual(['StepFailedError', 'StepMaxElapsedError', 'Error: add bank account failed']);
    const history = await env.history(h.workflowId);
    expect(history).toHaveFailedStep('add-bank-account');
    expect(history).toHaveCompletedStep('remove-client');
    expect(history).toHaveCompletedStep('clear-postal-addresses');
    expect(history).not.toHaveCompletedStep('disconnect-bank-accounts');
    expect(env.clock.now().getTime() - start).toBeGreaterThanOrEqual(35_000); // the three backoffs' least
  });

  it('stops at once, with nothing to undo, when creating the account fails (autoSkip)', async () => {
    await boot({ autoSkip: true });
    const failure = await env
      .runWorkflow('open-account', openAccount(accountId(), { createAccount: 'no such bank' }))
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(causes(failure)).toEqual(['StepFailedError', 'StepMaxElapsedError', 'Error: no such bank']);
    expect(calls).toEqual(['create-account', 'create-account', 'create-account']);
  });

  it('opens the account with no compensation when every step succeeds', async () => {
    await boot();
    const h = await env.start('open-account', openAccount(accountId()));
    await env.clock.settle();
    await env.result(h.workflowId);
    expect(calls).toEqual(['create-account', 'add-address', 'add-client', 'add-bank-account']);
    expect(await env.history(h.workflowId)).toHaveCompletedStep('add-bank-account');
  });
});
