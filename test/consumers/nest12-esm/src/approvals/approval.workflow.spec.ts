import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftEngine } from '@weft/nest';
import request from 'supertest';
import { AppModule } from '../app.module.js';

/** Polls `check` until it returns a value other than undefined, or fails after `ms`. */
async function eventually<T>(
  check: () => Promise<T | undefined>,
  ms = 15_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('ApprovalWorkflow (real PostgreSQL: DATABASE_URL, or the embedded default)', () => {
  let app: INestApplication;

  beforeAll(async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [AppModule],
    }).compile();
    app = moduleRef.createNestApplication();
    await app.init();
  }, 60_000);

  afterAll(async () => {
    await app?.close();
  });

  it('runs the injected step, waits for the signal, sleeps durably and returns', async () => {
    const engine = app.get(WeftEngine);
    const handle = await engine.start('approval', { name: 'Ada' });
    await eventually(async () =>
      (await handle.query('stage')) === 'awaiting-approval' ? true : undefined,
    );
    await handle.signal('approve', 'Grace');
    await expect(handle.result({ timeout: '20s' })).resolves.toEqual({
      greeting: 'Hello, Ada!',
      approvedBy: 'Grace',
    });
    const { status, history } = await handle.describe();
    expect(status).toBe('completed');
    expect(history.map((op) => op.name)).toContain('GreetingService.compose');
  }, 30_000);

  it('works over HTTP and answers /health with 200', async () => {
    const server = app.getHttpServer();
    await eventually(async () =>
      (await request(server).get('/health')).status === 200 ? true : undefined,
    );
    const started = await request(server)
      .post('/approvals')
      .send({ name: 'Linus' })
      .expect(201);
    const id = started.body.workflowId as string;
    await eventually(async () =>
      (await request(server).get(`/approvals/${id}`)).body.stage ===
      'awaiting-approval'
        ? true
        : undefined,
    );
    await request(server)
      .post(`/approvals/${id}/approve`)
      .send({ by: 'Ken' })
      .expect(201);
    const done = await eventually(async () => {
      const res = await request(server).get(`/approvals/${id}`);
      return res.body.status === 'completed' ? res.body : undefined;
    });
    expect(done.output).toEqual({
      greeting: 'Hello, Linus!',
      approvedBy: 'Ken',
    });
    await request(server).post('/approvals').send({ name: '' }).expect(400);
  }, 30_000);
});
