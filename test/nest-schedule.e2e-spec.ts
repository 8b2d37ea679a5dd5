import { INestApplication, Injectable, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Schedule, Step, WeftEngine, WeftLifecycle, WeftModule, Workflow, WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule } from '@weft/nest/testing';
import { createTestDatabase, TestDatabase } from './support/database.js';

@Injectable()
class Heartbeats {
  readonly beats: string[] = [];

  @Step()
  async beat(workflowId: string) {
    this.beats.push(workflowId);
  }
}

@Workflow('heartbeat')
@Schedule({ id: 'heartbeat-every-second', every: '1s' })
@Schedule({ id: 'heartbeat-nightly', cron: '0 3 * * *', timezone: 'Europe/Berlin', input: { nightly: true } })
class HeartbeatWorkflow {
  constructor(private readonly heartbeats: Heartbeats) {}

  async run(ctx: WorkflowContext) {
    await this.heartbeats.beat(ctx.workflowId);
  }
}

@Module({ providers: [Heartbeats, HeartbeatWorkflow] })
class HeartbeatModule {}

describe('@Schedule on a @Workflow class', () => {
  let tdb: TestDatabase;
  let app: INestApplication;
  let env: WeftTestEnvironment;

  beforeAll(async () => {
    tdb = await createTestDatabase('weft_nest_schedule');
    // The fires come on the testing kit's workflow clock: the test moves it instead of waiting.
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(), HeartbeatModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    await expect(app.get(WeftLifecycle).ready()).resolves.toBe('ready');
    env = app.get(WeftTestEnvironment);
  });

  afterAll(async () => {
    await app?.close();
    await tdb?.drop();
  });

  it('creates both schedules at bootstrap and fires the interval one each second, once per fire time', async () => {
    const engine = app.get(WeftEngine);
    const list = await engine.schedules.list();
    expect(list.map((s) => [s.id, s.source, s.workflowType])).toEqual([
      ['heartbeat-every-second', 'decorator', 'heartbeat'],
      ['heartbeat-nightly', 'decorator', 'heartbeat'],
    ]);
    expect(list[1]).toMatchObject({ cron: '0 3 * * *', timezone: 'Europe/Berlin', input: { nightly: true } });
    const heartbeats = app.get(Heartbeats);
    await env.clock.advance('3s');
    // Every fire time of the 3 s passed (real time passing meanwhile may add more), each once.
    expect(heartbeats.beats.length).toBeGreaterThanOrEqual(3);
    expect(new Set(heartbeats.beats).size).toBe(heartbeats.beats.length);
    expect(heartbeats.beats.every((id) => /^heartbeat-every-second@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/.test(id))).toBe(true);
    const times = heartbeats.beats.map((id) => Date.parse(id.slice('heartbeat-every-second@'.length))).sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i] - times[i - 1]).toBe(1000);
  });

  // #32 item 14: a misspelt option was ignored (the schedule fired in UTC).
  it('a misspelt @Schedule option fails the module at start-up, naming the class and the key', async () => {
    @Workflow('typo-workflow')
    @Schedule({ id: 'typo', cron: '0 3 * * *', timeZone: 'Asia/Tokyo' } as never)
    class TypoWorkflow {
      async run() {}
    }
    @Module({ providers: [TypoWorkflow] })
    class TypoModule {}
    const moduleRef = await Test.createTestingModule({
      imports: [WeftModule.forRoot({ database: { url: tdb.url }, schema: 'weft_typo', shutdownGracePeriod: 0 }), TypoModule],
    }).compile();
    const typo = moduleRef.createNestApplication({ logger: false });
    await expect(typo.init()).rejects.toMatchObject({
      code: 'WEFT_INVALID_ARGUMENT',
      message: expect.stringMatching(
        /^TypoWorkflow @Schedule\(\{ id: "typo", \.\.\. \}\): Invalid schedule options: unknown option "timeZone"/,
      ),
    });
    await typo.close().catch(() => undefined);
  });
});
