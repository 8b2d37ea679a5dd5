// A port of Temporal's samples-typescript `mutex` sample and its test to Weft, on
// @weft/nest/testing: a lock workflow per resource grants the lock to one requesting workflow at
// a time, by workflow-to-workflow signals, and takes it back when the holder releases it or its
// lease times out. The sample's assertions hold with no real waiting: the lease timeout and the
// holder's critical section are workflow time, moved by the test's clock (docs/testing.md).
import 'reflect-metadata';
import { Injectable, Module, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { QueryHandler, SignalHandler, Step, Workflow, type WorkflowContext } from '@weft/nest';
import { WeftTestEnvironment, WeftTestingModule, weftMatchers, type WeftMatchers } from '@weft/nest/testing';

declare module 'vitest' {
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  interface Assertion<T> extends WeftMatchers<T> {}
}
expect.extend(weftMatchers);

interface LockRequest {
  initiatorId: string;
  timeoutMs: number;
}

/** Grants a run of the lock workflow makes before it continues as new (Temporal's history-length bound). */
const GRANTS_PER_RUN = 100;

/** The lock of one resource: its workflow id is the resource id. */
@Workflow('lock')
class LockWorkflow {
  private readonly requests: LockRequest[] = [];
  private current: string | null = null;

  async run(ctx: WorkflowContext, carried: LockRequest[] | null): Promise<void> {
    this.requests.push(...(carried ?? []));
    for (let granted = 0; granted < GRANTS_PER_RUN; granted++) {
      await ctx.condition(() => this.requests.length > 0);
      const req = this.requests.shift()!;
      // A release signal name only this holder knows: a late release from an earlier holder
      // (whose lease timed out) cannot free the lock of the next one.
      const releaseSignal = `release-${ctx.uuid()}`;
      try {
        await ctx.signalWorkflow(req.initiatorId, 'lock-acquired', { releaseSignal });
      } catch {
        continue; // the requester has ended meanwhile: the next one
      }
      this.current = req.initiatorId;
      await ctx.waitForSignal(releaseSignal, { timeout: req.timeoutMs });
      this.current = null;
    }
    // Requests taken by the handler but not granted yet go to the next run with the input.
    return ctx.continueAsNew(this.requests);
  }

  @SignalHandler('lock-request')
  onRequest(req: LockRequest): void {
    this.requests.push(req);
  }

  @QueryHandler('current-workflow-id')
  currentWorkflowId(): string | null {
    return this.current;
  }
}

/** The sample's notify activities; the test replaces them to observe the lock. */
@Injectable()
class LockNotices {
  @Step({ name: 'notify-locked' })
  async locked(resourceId: string, releaseSignal: string): Promise<void> {
    void resourceId;
    void releaseSignal;
  }

  @Step({ name: 'notify-unlocked' })
  async unlocked(resourceId: string): Promise<void> {
    void resourceId;
  }
}

interface OneAtATimeInput {
  resourceId: string;
  sleepForMs?: number;
  lockTimeoutMs?: number;
}

/**
 * Takes the resource's lock (starting its lock workflow if none runs: Temporal's
 * signal-with-start), holds it for `sleepForMs` of workflow time (the sample's activity that
 * must not run in parallel, a durable sleep here so the test's clock can pass it), releases it.
 */
@Workflow('one-at-a-time')
class OneAtATimeWorkflow {
  private releaseSignal = '';
  constructor(private readonly notices: LockNotices) {}

  async run(ctx: WorkflowContext, { resourceId, sleepForMs = 500, lockTimeoutMs = 1000 }: OneAtATimeInput): Promise<void> {
    await ctx.startWorkflow('lock', null, { workflowId: resourceId });
    await ctx.signalWorkflow(resourceId, 'lock-request', { initiatorId: ctx.workflowId, timeoutMs: lockTimeoutMs } satisfies LockRequest);
    await ctx.condition(() => this.releaseSignal !== '');
    await this.notices.locked(resourceId, this.releaseSignal);
    await ctx.sleep(sleepForMs);
    await ctx.signalWorkflow(resourceId, this.releaseSignal);
    this.releaseSignal = '';
    await this.notices.unlocked(resourceId);
  }

  @SignalHandler('lock-acquired')
  onAcquired(grant: { releaseSignal: string }): void {
    this.releaseSignal = grant.releaseSignal;
  }
}

@Module({ providers: [LockNotices, LockWorkflow, OneAtATimeWorkflow] })
class MutexModule {}

describe("Temporal's mutex sample on the Weft testing kit", () => {
  let app: INestApplication;
  let env: WeftTestEnvironment;
  let events: Array<{ event: 'locked' | 'unlocked'; resourceId: string; holder?: string }>;
  let n = 0;
  const id = (prefix: string) => `${prefix}-${process.pid}-${++n}`;
  const currentHolder = (lockId: string) => env.engine.query<string | null>(lockId, 'current-workflow-id');

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [WeftTestingModule.forRoot(), MutexModule] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    env = app.get(WeftTestEnvironment);
    events = [];
    env.mockStep(LockNotices, 'locked', async (resourceId: string) => void events.push({ event: 'locked', resourceId }));
    env.mockStep(LockNotices, 'unlocked', async (resourceId: string) => void events.push({ event: 'unlocked', resourceId }));
  });
  afterEach(async () => app?.close());

  it('handles locking and unlocking', async () => {
    const testWorkflowId = id('test');
    const lockWorkflowId = id('lock');
    await env.start('one-at-a-time', { resourceId: lockWorkflowId, sleepForMs: 1000, lockTimeoutMs: 1500 }, { workflowId: testWorkflowId });

    await env.clock.settle();
    expect(events).toEqual([{ event: 'locked', resourceId: lockWorkflowId }]);
    expect(await currentHolder(lockWorkflowId)).toBe(testWorkflowId);

    await env.clock.advance('1s'); // the critical section ends; the holder releases
    expect(events.map((e) => e.event)).toEqual(['locked', 'unlocked']);
    expect(await currentHolder(lockWorkflowId)).toBeNull();
    await env.result(testWorkflowId);
    const history = await env.history(testWorkflowId);
    expect(history).toHaveReceivedSignal('lock-acquired');
    expect(history).toHaveCompletedStep('notify-unlocked');
  });

  it('automatically releases the lock after timeout', async () => {
    const testWorkflowId1 = id('test');
    const lockWorkflowId = id('lock');
    await env.start('one-at-a-time', { resourceId: lockWorkflowId, sleepForMs: 10_000 }, { workflowId: testWorkflowId1 });
    await env.clock.settle();
    expect(events).toEqual([{ event: 'locked', resourceId: lockWorkflowId }]);
    expect(await currentHolder(lockWorkflowId)).toBe(testWorkflowId1);

    const testWorkflowId2 = id('test');
    await env.start('one-at-a-time', { resourceId: lockWorkflowId, sleepForMs: 10_000 }, { workflowId: testWorkflowId2 });

    await env.clock.advance('100ms');
    expect(await currentHolder(lockWorkflowId)).toBe(testWorkflowId1);

    await env.clock.advance('1200ms'); // past the first holder's 1 s lease
    expect(await currentHolder(lockWorkflowId)).toBe(testWorkflowId2);
    expect(events.map((e) => e.event)).toEqual(['locked', 'locked']);

    // Both critical sections end (the first holder's release comes after its lease ran out, to a
    // name the lock no longer waits on); both runs complete and the lock is free.
    await env.clock.advance('10s');
    await env.result(testWorkflowId1);
    await env.result(testWorkflowId2);
    expect(events.map((e) => e.event)).toEqual(['locked', 'locked', 'unlocked', 'unlocked']);
    expect(await currentHolder(lockWorkflowId)).toBeNull();
  });
});
