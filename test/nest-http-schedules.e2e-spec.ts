import { INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { WeftEngine, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import request from 'supertest';
import { createTestDatabase, TestDatabase } from './support/database.js';

@Workflow('report')
class ReportWorkflow {
  async run(ctx: WorkflowContext, input: { n: number }) {
    return ctx.step('count', () => input.n * 2);
  }
}

@Module({ providers: [ReportWorkflow] })
class ReportsModule {}

describe('schedules over HTTP (<prefix>/schedules)', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let http: ReturnType<typeof request>;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_http_schedules');
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft', timerPollInterval: 50, http: true }), ReportsModule],
    }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    http = request(app.getHttpServer());
  });
  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('create, list, describe, pause, unpause, trigger, update, delete; errors keep their codes', async () => {
    const created = await http
      .post('/weft/schedules')
      .send({ id: 'daily', workflowType: 'report', cron: '0 6 * * *', timezone: 'Europe/Paris', input: { n: 21 } })
      .expect(201);
    expect(created.body).toMatchObject({ id: 'daily', cron: '0 6 * * *', timezone: 'Europe/Paris', paused: false, source: 'api' });
    expect(created.body.nextFireTimes).toHaveLength(5);
    await http
      .post('/weft/schedules')
      .send({ id: 'daily', workflowType: 'report', every: '1h' })
      .expect(409, /WEFT_SCHEDULE_ALREADY_EXISTS/);
    await http
      .post('/weft/schedules')
      .send({ id: 'bad', workflowType: 'report', cron: 'nope' })
      .expect(400, /WEFT_INVALID_ARGUMENT/);
    await http
      .post('/weft/schedules')
      .send({ id: 'x', workflowType: 'report', every: '1h', surprise: 1 })
      .expect(400, /unknown field/);

    expect((await http.get('/weft/schedules').expect(200)).body.map((s: { id: string }) => s.id)).toEqual(['daily']);
    await http.get('/weft/schedules?limit=abc').expect(400);
    expect((await http.post('/weft/schedules/daily/pause').type('json').expect(200)).body).toMatchObject({
      paused: true,
      nextFireTimes: [],
    });
    expect((await http.post('/weft/schedules/daily/unpause').type('json').expect(200)).body).toMatchObject({ paused: false });

    const { workflowId } = (await http.post('/weft/schedules/daily/trigger').type('json').expect(202)).body;
    await expect(app.get(WeftEngine).result(workflowId, { timeout: '10s' })).resolves.toBe(42);
    expect((await http.get('/weft/schedules/daily').expect(200)).body.recentRuns[0]).toMatchObject({
      workflowId,
      outcome: 'triggered',
      status: 'completed',
    });

    expect((await http.patch('/weft/schedules/daily').send({ every: '30m' }).expect(200)).body).toMatchObject({
      cron: null,
      everyMs: 1_800_000,
    });
    await http.delete('/weft/schedules/daily').expect(204);
    await http.get('/weft/schedules/daily').expect(404, /WEFT_SCHEDULE_NOT_FOUND/);
  });
});
