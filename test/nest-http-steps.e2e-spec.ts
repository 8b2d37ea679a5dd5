import { INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { StepArgs, WeftEngine, WeftModule, Workflow, WorkflowContext, WorkflowFailedError, StepFailedError } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';

const tokens: Record<string, string[]> = {};

@Workflow('approval')
class ApprovalWorkflow {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'approve',
      ({ completionToken }: StepArgs) => {
        (tokens[ctx.workflowId] ??= []).push(completionToken!);
      },
      { complete: 'external', retry: { maxAttempts: 3, initialInterval: 10 } },
    );
  }
}

@Module({ providers: [ApprovalWorkflow] })
class ApprovalsModule {}

describe('external step completion over HTTP (<prefix>/workflows/:id/steps/complete|fail)', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let engine: WeftEngine;
  const tokenOf = (id: string, n = 1) => waitFor(() => tokens[id]?.[n - 1], `token ${n} of ${id}`);

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_http_steps');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, http: true }), ApprovalsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
    engine = app.get(WeftEngine);
  });
  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('completes once; a second call is 409 WEFT_STEP_ALREADY_COMPLETED; a token of another workflow is 400', async () => {
    await engine.start('approval', {}, { workflowId: 'http-ok' });
    const token = await tokenOf('http-ok');
    await http
      .post('/weft/workflows/other/steps/complete')
      .send({ token, result: 1 })
      .expect(400, /WEFT_INVALID_ARGUMENT/);
    await http
      .post('/weft/workflows/http-ok/steps/complete')
      .send({ token, result: { approved: true } })
      .expect(200, { workflowId: 'http-ok', completed: true });
    await expect(engine.result('http-ok', { timeout: '10s' })).resolves.toEqual({ approved: true });
    await http
      .post('/weft/workflows/http-ok/steps/complete')
      .send({ token, result: 2 })
      .expect(409, /WEFT_STEP_ALREADY_COMPLETED/);
    await http
      .post('/weft/workflows/http-ok/steps/complete')
      .send({ token: 'nope' })
      .expect(400, /WEFT_INVALID_ARGUMENT/);
    await http
      .post('/weft/workflows/http-ok/steps/complete')
      .send({ token, surprise: 1 })
      .expect(400, /unknown field/);
  });

  it('fails an attempt (retried), then fails the step for good with nonRetryable, keeping code and details', async () => {
    await engine.start('approval', {}, { workflowId: 'http-fail' });
    await http
      .post('/weft/workflows/http-fail/steps/fail')
      .send({ token: await tokenOf('http-fail'), error: { message: 'try later' } })
      .expect(200, { workflowId: 'http-fail', failed: true });
    await http
      .post('/weft/workflows/http-fail/steps/fail')
      .send({
        token: await tokenOf('http-fail', 2),
        error: { message: 'refused', name: 'PolicyRefusal', code: 'POLICY', details: { by: 'ops' }, nonRetryable: true },
      })
      .expect(200);
    const err = await engine.result('http-fail', { timeout: '10s' }).catch((e: unknown) => e);
    const step = (err as WorkflowFailedError).cause as StepFailedError;
    expect(step.attempts).toBe(2);
    expect(step.cause).toMatchObject({
      name: 'PolicyRefusal',
      message: 'refused',
      code: 'POLICY',
      details: { by: 'ops' },
      nonRetryable: true,
    });
    await http
      .post('/weft/workflows/http-fail/steps/fail')
      .send({ token: tokens['http-fail'][1], error: {} })
      .expect(400, /error.message/);
  });
});
