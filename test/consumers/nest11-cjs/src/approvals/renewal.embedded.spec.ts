import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';
import { ApprovalsModule } from './approvals.module';
import { GreetingService } from './greeting.service';
import { RENEWAL_WORKFLOW } from './renewal.workflow';

// With no WEFT_TEST_DATABASE_URL, the kit falls back to its embedded server. jest's CommonJS
// runtime cannot load that server's ES modules, so the kit runs it in a child process.
describe('RenewalWorkflow on the testing kit, no database configured', () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;

  beforeAll(async () => {
    delete process.env.WEFT_TEST_DATABASE_URL;
    const moduleRef = await Test.createTestingModule({
      imports: [WeftTestingModule.forRoot(), ApprovalsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
  }, 120_000);

  afterAll(async () => {
    await app?.close();
  });

  it('runs on the embedded server: 30 days of sleep, then the signal', async () => {
    expect(new URL(env.databaseUrl).hostname).toBe('127.0.0.1');
    env.mockStep(GreetingService, 'compose', (name: string) =>
      Promise.resolve(`Hi ${name}`),
    );
    const handle = await env.start(RENEWAL_WORKFLOW, { name: 'Ada' });
    await env.clock.advance('30d');
    await env.signal(handle.workflowId, 'renew', 'Grace');
    await expect(env.result(handle.workflowId)).resolves.toEqual({
      greeting: 'Hi Ada',
      renewedBy: 'Grace',
    });
  }, 30_000);
});
