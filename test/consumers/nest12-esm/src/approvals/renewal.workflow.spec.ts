import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  WeftTestEnvironment,
  WeftTestingModule,
  weftMatchers,
  type WeftMatchers,
} from '@weft/nest/testing';
import { ApprovalsModule } from './approvals.module.js';
import { GreetingService } from './greeting.service.js';
import { RENEWAL_WORKFLOW } from './renewal.workflow.js';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-explicit-any
  interface Matchers<T = any> extends WeftMatchers<T> {}
}
expect.extend(weftMatchers);

describe('RenewalWorkflow on the testing kit (time skips)', () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [WeftTestingModule.forRoot(), ApprovalsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
  }, 60_000);

  afterAll(async () => {
    await app?.close();
  });

  it('sleeps 30 days, then gets the signal within its 7 days', async () => {
    env.mockStep(
      GreetingService,
      'compose',
      async (name: string) => `Hi ${name}`,
    );
    const handle = await env.start(RENEWAL_WORKFLOW, { name: 'Ada' });
    await env.clock.advance('30d');
    await env.clock.advance('6d');
    await env.signal(handle.workflowId, 'renew', 'Grace');
    await expect(env.result(handle.workflowId)).resolves.toEqual({
      greeting: 'Hi Ada',
      renewedBy: 'Grace',
    });
    const history = await env.history(handle.workflowId);
    expect(history).toHaveCompletedStep('GreetingService.compose');
    expect(history).toHaveReceivedSignal('renew');
  }, 30_000);

  it('gives up after the 7 days without a signal', async () => {
    const handle = await env.start(RENEWAL_WORKFLOW, { name: 'Linus' });
    await env.clock.advance('37d');
    await expect(env.result(handle.workflowId)).resolves.toMatchObject({
      renewedBy: null,
    });
  }, 30_000);
});
