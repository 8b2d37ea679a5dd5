import 'reflect-metadata';
import { CanActivate, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';
import { waitFor } from './support/engine.js';

// GET <prefix>/queues/:name/partitions (docs/api.md, docs/queues.md "Watching partitions"): behind
// the same guards as /queues; a partitioned queue's keys with work, busiest first, bounded.

@Workflow('export')
class ExportWorkflow {
  async run(ctx: WorkflowContext) {
    await ctx.waitForSignal('go');
  }
}

/** false (Nest's 403) without `x-key: yes`. */
const keyGuard: CanActivate = {
  canActivate: (ctx) => ctx.switchToHttp().getRequest<{ headers: Record<string, unknown> }>().headers['x-key'] === 'yes',
};

describe('GET /weft/queues/:name/partitions', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;
  let engine: WeftEngine;
  const key = { 'x-key': 'yes' };

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_http_partitions');
    const moduleRef = await Test.createTestingModule({
      imports: [
        WeftModule.forRoot({
          database: { url: tdb.url },
          timerPollInterval: 50,
          shutdownGracePeriod: 0,
          queues: { exports: { concurrency: 10, partition: { concurrency: 1 } }, plain: {} },
          http: { guards: [keyGuard] },
        }),
      ],
      providers: [ExportWorkflow],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
    engine = app.get(WeftEngine);
    for (const [tenant, n] of [
      ['acme', 3],
      ['globex', 1],
    ] as const) {
      for (let i = 0; i < n; i++)
        await engine.start('export', {}, { workflowId: `${tenant}-${i}`, queue: 'exports', partitionKey: tenant });
    }
    // One of each tenant admitted (partition.concurrency 1): acme 2 enqueued and 1 running, globex 1 running.
    await waitFor(async () => (await engine.list({ status: 'running' })).items.length === 2, 'one run of each tenant');
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('is guarded like /queues', async () => {
    await http.get('/weft/queues/exports/partitions').expect(403);
    await http.get('/weft/queues').expect(403);
  });

  it("answers the queue's keys with work, busiest first, with the count of them all", async () => {
    const res = await http.get('/weft/queues/exports/partitions').set(key).expect(200);
    expect(res.body).toMatchObject({ queue: 'exports', partitioned: true, keysWithWork: 2 });
    expect(
      res.body.partitions.map((p: { partitionKey: string; enqueued: number; running: number }) => [p.partitionKey, p.enqueued, p.running]),
    ).toEqual([
      ['acme', 2, 1],
      ['globex', 0, 1],
    ]);
    expect(typeof res.body.partitions[0].oldestEnqueuedAgeMs).toBe('number');
    expect(res.body.partitions[1].oldestEnqueuedAt).toBeNull();
    const one = await http.get('/weft/queues/exports/partitions?limit=1').set(key).expect(200);
    expect([one.body.keysWithWork, one.body.partitions.length]).toEqual([2, 1]);
    const plain = await http.get('/weft/queues/plain/partitions').set(key).expect(200);
    expect(plain.body).toMatchObject({ queue: 'plain', partitioned: false, keysWithWork: 0, partitions: [] });
  });

  it('refuses a bad limit, an unknown parameter and an unknown queue with 400 and a code', async () => {
    for (const [p, code] of [
      ['/weft/queues/exports/partitions?limit=0', 'WEFT_INVALID_ARGUMENT'],
      ['/weft/queues/exports/partitions?limit=101', 'WEFT_INVALID_ARGUMENT'],
      ['/weft/queues/exports/partitions?limit=x', 'WEFT_INVALID_ARGUMENT'],
      ['/weft/queues/exports/partitions?limit=1&limit=2', 'WEFT_INVALID_ARGUMENT'],
      ['/weft/queues/exports/partitions?sort=key', 'WEFT_INVALID_ARGUMENT'],
      ['/weft/queues/nope/partitions', 'WEFT_QUEUE_NOT_DECLARED'],
    ]) {
      const res = await http.get(p).set(key);
      expect([p, res.status, res.body.code]).toEqual([p, 400, code]);
    }
  });
});
