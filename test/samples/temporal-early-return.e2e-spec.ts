// A port of Temporal's samples-typescript `early-return` sample and its test to Weft, on
// @weft/nest/testing: updateWithStart starts a transaction workflow and returns its early
// confirmation (an async update handler that waits for the quick authorization) while the
// workflow goes on to its slower completion. The workflow id conflict policy FAIL is Weft's
// idPolicy 'reject-duplicate'. Workflow time: the sample's sleeps are skipped (autoSkip).
import 'reflect-metadata';
import { Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { UpdateHandler, Workflow, WorkflowAlreadyStartedError, type WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';

interface TransactionReport {
  status: 'complete' | 'failed';
  finalAmount?: number;
}

interface TransactionConfirmation {
  status: 'confirmed';
}

@Workflow('transaction')
class TransactionWorkflow {
  declare ctx: WorkflowContext;
  private confirmed = false;

  async run(): Promise<TransactionReport> {
    // The low-latency operation that authorizes the transaction.
    await this.ctx.sleep(500);
    this.confirmed = true;
    // The slower completion (payment capture).
    await this.ctx.sleep(5000);
    return { finalAmount: 77, status: 'complete' };
  }

  @UpdateHandler('get-transaction-confirmation')
  async getTransactionConfirmation(): Promise<TransactionConfirmation> {
    await this.ctx.condition(() => this.confirmed);
    return { status: 'confirmed' };
  }
}

@Module({ providers: [TransactionWorkflow] })
class TransactionModule {}

describe("Temporal's early-return sample on the Weft testing kit", () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WeftTestingModule.forRoot({ autoSkip: true }), TransactionModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
  });
  afterEach(async () => app?.close());

  it('supports early return', async () => {
    const workflowId = `transaction-${process.pid}-${Date.now()}`;
    const transactionConfirmation = await env.engine.updateWithStart<TransactionConfirmation>(
      'transaction',
      null,
      { workflowId, idPolicy: 'reject-duplicate' },
      'get-transaction-confirmation',
      null,
      { timeout: '20s' },
    );
    expect(transactionConfirmation.status).toBe('confirmed');
    // We have the confirmation, and the transaction workflow runs in the background: wait for it
    // to complete and read the final report.
    const finalTransactionReport = await env.result<TransactionReport>(workflowId, { timeout: '20s' });
    expect(finalTransactionReport.status).toBe('complete');
    expect(finalTransactionReport.finalAmount).toBe(77);
    // The confirmation came first: the update's condition resolved before the slower part (the
    // second sleep) ended. Read from the history: a describe right after the update raced autoSkip,
    // which may end that sleep at once (CI saw 'completed').
    const history = await env.history(workflowId);
    const confirmed = history.find((r) => r.kind === 'condition')?.event;
    const captured = history.filter((r) => r.kind === 'sleep')[1]?.event;
    expect(typeof confirmed === 'number' && typeof captured === 'number' && confirmed < captured).toBe(true);

    // The conflict policy FAIL: a second update-with-start of the same id is refused.
    await expect(
      env.engine.updateWithStart('transaction', null, { workflowId, idPolicy: 'reject-duplicate' }, 'get-transaction-confirmation'),
    ).rejects.toBeInstanceOf(WorkflowAlreadyStartedError);
  });
});
