import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import { currentStep } from './als.js';
import { StepFailedError, WorkflowFailedError } from '../common/errors.js';
import type { StepArgs, WorkflowContext } from '../common/types.js';
import type { WeftEngine } from './engine.js';
import { NoFence } from '../ownership/roles.js';
import { HeartbeatWriter } from './run/heartbeat-writer.js';
import { StepProgress } from './run/step-progress.js';
import type { StepProgressRepository } from '../storage/repositories/step-progress.repository.js';

// Heartbeats (DESIGN 9.4, docs/long-steps.md): currentStep().heartbeat(details) saves progress a
// retry reads as lastHeartbeat, here or on the engine that takes the workflow over; a step whose
// heartbeats stop past heartbeatTimeout is retried; writes are batched, one statement per flush.

const seen: Record<string, unknown[]> = {};
const see = (key: string, v: unknown) => (seen[key] ??= []).push(v);
const forever = (signal: AbortSignal) => new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));

/** Attempt 1 reports progress 3 then fails; attempt 2 resumes from what it reads. */
class Resumes {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'import',
      ({ attempt }: StepArgs) => {
        const step = currentStep()!;
        see('resumes', { attempt, last: step.lastHeartbeat });
        if (attempt === 1) {
          for (let done = 1; done <= 3; done++) step.heartbeat({ done });
          throw new Error('connection reset');
        }
        return (step.lastHeartbeat as { done: number }).done;
      },
      { retry: { maxAttempts: 2, initialInterval: 10 } },
    );
  }
}

/** Beats once, then hangs: heartbeatTimeout aborts it; attempt 2 beats steadily past the timeout and finishes. */
class GoesQuiet {
  async run(ctx: WorkflowContext) {
    return ctx.step(
      'poll',
      async ({ attempt, signal, heartbeat, lastHeartbeat }: StepArgs) => {
        see('quiet', { attempt, last: lastHeartbeat });
        heartbeat(`attempt ${attempt}`);
        if (attempt === 1) return forever(signal);
        for (let i = 0; i < 8; i++) {
          await new Promise((r) => setTimeout(r, 50));
          heartbeat(i);
        }
        return 'done';
      },
      { heartbeatTimeout: 200, retry: { maxAttempts: 2, initialInterval: 10 } },
    );
  }
}

/** Reports progress and hangs, so its engine can go away mid-step; after a takeover it returns what it resumed from. */
class Hangs {
  async run(ctx: WorkflowContext, input: { maxElapsed?: number }) {
    return ctx.step(
      'long',
      async ({ attempt, signal }: StepArgs) => {
        const step = currentStep()!;
        see(ctx.workflowId, { attempt, last: step.lastHeartbeat });
        if (step.lastHeartbeat !== undefined) return { resumedFrom: step.lastHeartbeat, attempt };
        step.heartbeat({ offset: 40 });
        step.heartbeat({ offset: 41 });
        return forever(signal);
      },
      { retry: { maxAttempts: 5, initialInterval: 10, ...(input.maxElapsed ? { maxElapsed: input.maxElapsed } : {}) } },
    );
  }
}

/** Beats every 20 ms for a while: the batching test runs many. */
class Beats {
  async run(ctx: WorkflowContext) {
    return ctx.step('beats', async ({ heartbeat }: StepArgs) => {
      for (let i = 0; i < 40; i++) {
        heartbeat(i);
        await new Promise((r) => setTimeout(r, 20));
      }
      return 40;
    });
  }
}

let releaseGated: () => void = () => undefined;
const gated = new Promise<void>((r) => (releaseGated = r));

/** Beats, then returns once the test lets it (its engine loses the claim meanwhile); a later run returns what it resumed from. */
class Gated {
  async run(ctx: WorkflowContext) {
    return ctx.step('gated', async ({ heartbeat, lastHeartbeat }: StepArgs) => {
      see(ctx.workflowId, lastHeartbeat);
      if (seen[ctx.workflowId].length > 1) return { resumedFrom: lastHeartbeat ?? null };
      heartbeat({ done: 7 });
      await gated;
      return { resumedFrom: 'the first run' };
    });
  }
}

/** Hands its attempt's heartbeat to the test (a beat whenever it likes, e.g. after a takeover) and hangs. */
const beaters: Record<string, (details: unknown) => void> = {};
class Beater {
  async run(ctx: WorkflowContext) {
    return ctx.step('beater', async ({ heartbeat, signal }: StepArgs) => {
      beaters[ctx.workflowId] = heartbeat;
      return forever(signal);
    });
  }
}

const register = (e: WeftEngine) =>
  e
    .register('resumes', Resumes)
    .register('quiet', GoesQuiet)
    .register('hangs', Hangs)
    .register('beats', Beats)
    .register('gated', Gated)
    .register('beater', Beater);
const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300, heartbeatFlushInterval: 50 };
const internals = (e: WeftEngine) =>
  (e as unknown as { runtime: { heartbeats: HeartbeatWriter; store: { stepProgress: StepProgressRepository } } }).runtime;
const writerOf = (e: WeftEngine) => internals(e).heartbeats;

describe('step heartbeats (real PostgreSQL)', () => {
  const env = useTestEngines();
  const rows = (id: string, schema = 'weft') =>
    env.tdb.query<{ seq: number; attempt: number; details: unknown; has_details: boolean; first_started_at: Date }>(
      `SELECT seq, attempt, details, has_details, first_started_at FROM ${schema}.weft_step_progress WHERE workflow_id = $1`,
      [id],
    );
  /** Engine X takes the workflow's claim, as a takeover writes it (its epoch on the workflow row too). */
  const takeClaim = (id: string, expiresIn: string, schema = 'weft') =>
    env.tdb.query(
      `WITH c AS (UPDATE ${schema}.weft_workflow_claims SET epoch = epoch + 1, engine_id = 'X', expires_at = now() + $2::interval
                  WHERE workflow_id = $1 RETURNING workflow_id, epoch)
       UPDATE ${schema}.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [id, expiresIn],
    );

  it("a retry reads the last heartbeat's details", async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('resumes', {}, { workflowId: 'resumes-1' });
    await expect(a.result('resumes-1', { timeout: '10s' })).resolves.toBe(3);
    expect(seen.resumes).toEqual([
      { attempt: 1, last: undefined },
      { attempt: 2, last: { done: 3 } },
    ]);
    // The step ended: its saved progress goes.
    await waitFor(async () => (await rows('resumes-1')).length === 0, 'the progress row removed');
  });

  it('heartbeatTimeout aborts an attempt whose heartbeats stopped; steady heartbeats keep one alive past it', async () => {
    const a = await env.pool.create(WL, register);
    await a.bootstrap();
    await a.start('quiet', {}, { workflowId: 'quiet-1' });
    await expect(a.result('quiet-1', { timeout: '10s' })).resolves.toBe('done');
    expect(seen.quiet).toEqual([
      { attempt: 1, last: undefined },
      { attempt: 2, last: 'attempt 1' },
    ]);
  });

  it('heartbeatTimeout fails the step with StepHeartbeatTimeoutError once the attempts are used', async () => {
    class Silent {
      async run(ctx: WorkflowContext) {
        return ctx.step('silent', ({ signal }: StepArgs) => forever(signal), { heartbeatTimeout: 100, retry: { maxAttempts: 1 } });
      }
    }
    const a = await env.pool.create(WL, (e) => e.register('silent', Silent));
    await a.bootstrap();
    await a.start('silent', {}, { workflowId: 'silent-1' });
    const err = await a.result('silent-1', { timeout: '10s' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const step = (err as WorkflowFailedError).cause as StepFailedError;
    expect(step.cause).toMatchObject({ name: 'StepHeartbeatTimeoutError', code: 'WEFT_STEP_HEARTBEAT_TIMEOUT', heartbeatTimeoutMs: 100 });
  });

  it('after a takeover, the step runs again on the new owner from the last saved heartbeat, counting on from its attempt', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A' }, register);
    await a.bootstrap();
    await a.start('hangs', {}, { workflowId: 'hangs-1' });
    await waitFor(async () => (await rows('hangs-1'))[0]?.has_details, 'the heartbeat saved');
    expect((await rows('hangs-1'))[0]).toMatchObject({ attempt: 1, details: { offset: 41 } });
    await a.dispose(); // its body never ends: stopped, the step left unrecorded

    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await expect(b.result('hangs-1', { timeout: '10s' })).resolves.toEqual({ resumedFrom: { offset: 41 }, attempt: 2 });
    expect(seen['hangs-1']).toEqual([
      { attempt: 1, last: undefined },
      { attempt: 2, last: { offset: 41 } },
    ]);
    const [op] = await env.tdb.query<{ attempts: number }>(`SELECT attempts FROM weft.weft_operations WHERE workflow_id = 'hangs-1'`);
    expect(op.attempts).toBe(2);
  });

  it('a step whose body ended on an engine deposed before its record committed keeps its saved heartbeat for the next owner', async () => {
    // The chaos soak found it (test/chaos, 'cancelcleanup'): the row went with the body's end, before the refused record.
    const a = await env.pool.create({ ...WL, engineId: 'A', workflowClaimTtl: 60_000, workflowClaimRenewInterval: 20_000 }, register);
    await a.bootstrap();
    await a.start('gated', {}, { workflowId: 'gated-1' });
    await waitFor(async () => (await rows('gated-1'))[0]?.has_details, 'the heartbeat saved');
    // Another engine takes the claim (as a takeover writes it, expiring soon); A learns it when its record is refused.
    await takeClaim('gated-1', '300 ms');
    releaseGated();
    await waitFor(() => a.healthSnapshot().liveWorkflows === 0, 'A lets the run go (its record refused)');
    await writerOf(a).flush(); // whatever A queued by then reaches the table
    expect((await rows('gated-1'))[0]).toMatchObject({ attempt: 1, details: { done: 7 } });
    await a.dispose();

    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await expect(b.result('gated-1', { timeout: '10s' })).resolves.toEqual({ resumedFrom: { done: 7 } });
    await waitFor(async () => (await rows('gated-1')).length === 0, 'the progress row removed once recorded');
  });

  it('a cancelled step keeps its saved heartbeat while the cancel is not durable (its engine deposed before the commit)', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A', workflowClaimTtl: 60_000, workflowClaimRenewInterval: 20_000 }, register);
    await a.bootstrap();
    await a.start('hangs', {}, { workflowId: 'hangs-cancel' });
    await waitFor(async () => (await rows('hangs-cancel'))[0]?.has_details, 'the heartbeat saved');
    await takeClaim('hangs-cancel', '1 hour');
    await a.cancel('hangs-cancel'); // A applies it at once: the body aborts, the cancel's record is refused
    await waitFor(() => a.healthSnapshot().liveWorkflows === 0, 'A lets the run go (its record refused)');
    await writerOf(a).flush();
    // The next owner runs the step again (the cancel was not recorded): from this heartbeat.
    expect((await rows('hangs-cancel'))[0]).toMatchObject({ attempt: 1, details: { offset: 41 } });
  });

  describe.each([
    ['workflow-lease', { ...WL, workflowClaimTtl: 60_000, workflowClaimRenewInterval: 20_000, schema: 'weft' }],
    ['lease', { ownership: 'lease' as const, leaseTtl: 60_000, leaseRenewInterval: 20_000, schema: 'hb_lease' }],
  ])('%s', (mode, options) => {
    // The chaos soak found it (lease profile): the new owner had loaded no row, so it counted its
    // attempts from 1 as the deposed engine had; the deposed engine's late batch (same attempt)
    // then overwrote the new owner's progress, and the next owner resumed from the older one.
    it("a deposed engine's late heartbeat does not overwrite what the new owner saved", async () => {
      const id = `late-beat-${mode}`;
      const schema = options.schema ?? 'weft';
      const a = await env.pool.create({ ...options, engineId: 'A', heartbeatFlushInterval: 60_000 }, register);
      await a.bootstrap();
      await a.start('beater', {}, { workflowId: id });
      await waitFor(() => beaters[id] !== undefined, "the step's body running");
      // Another engine takes over (as a takeover writes it), loads no progress, runs attempt 1 and saves it.
      if (mode === 'lease')
        await env.tdb.query(
          `UPDATE ${schema}.weft_global_lease SET epoch = epoch + 1, holder = 'X', expires_at = now() + interval '1 hour' WHERE id = 1`,
        );
      else await takeClaim(id, '1 hour', schema);
      await env.tdb.query(
        `INSERT INTO ${schema}.weft_step_progress (workflow_id, run_number, seq, attempt, first_started_at, has_details, details, beat_at)
         SELECT id, run_number, 0, 1, now(), true, '{"done":2}', now() FROM ${schema}.weft_workflows WHERE id = $1`,
        [id],
      );
      // The deposed engine's body beats on (it has not learnt yet), and its batch reaches the database.
      beaters[id]({ done: 0 });
      await writerOf(a).flush();
      expect(await rows(id, schema)).toMatchObject([{ attempt: 1, details: { done: 2 } }]);
    });
  });

  it('a step that ends while a failed batch was in flight is not written again by the next one', async () => {
    const a = await env.pool.create({ ...WL, heartbeatFlushInterval: 60_000 }, register);
    await a.bootstrap();
    await a.start('beater', {}, { workflowId: 'ended-in-flight' }); // its row is what the writer's rows need
    const repo = internals(a).store.stepProgress;
    let fail: (err: Error) => void = () => undefined;
    let calls = 0;
    const flaky = {
      flush: (...args: Parameters<StepProgressRepository['flush']>) =>
        calls++ === 0 ? new Promise<void>((_, reject) => (fail = reject)) : repo.flush(...args),
    };
    const warnings: string[] = [];
    const logger = { log: () => undefined, warn: (m: string) => warnings.push(m), error: () => undefined, debug: () => undefined };
    const writer = new HeartbeatWriter(flaky, logger, 60_000, new NoFence());
    const progress = new StepProgress('ended-in-flight', 1, 99, 'probe', writer, 1024);
    progress.attemptBegins(1, false, false);
    progress.beat(1, { done: 1 });
    const first = writer.flush();
    progress.end(); // its record committed while the batch was in flight
    fail(new Error('connection reset'));
    await first;
    expect(warnings).toHaveLength(1);
    await writer.flush();
    expect((await rows('ended-in-flight')).filter((r) => r.seq === 99)).toEqual([]);
  });

  it('retry.maxElapsed counts from the first start an earlier owner saved: past it, the new owner starts no attempt', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A' }, register);
    await a.bootstrap();
    await a.start('hangs', { maxElapsed: 1500 }, { workflowId: 'elapsed-takeover' });
    const row = await waitFor(async () => (await rows('elapsed-takeover'))[0], 'the first start saved');
    await a.dispose();
    // Taken over only once the deadline, counted from the saved first start, has passed.
    await waitFor(() => Date.now() > row.first_started_at.getTime() + 1600, 'the deadline passed', 5000);
    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    const err = await b.result('elapsed-takeover', { timeout: '10s' }).catch((e: unknown) => e);
    const step = (err as WorkflowFailedError).cause as StepFailedError;
    expect(step.cause).toMatchObject({ name: 'StepMaxElapsedError', maxElapsedMs: 1500 });
    expect(seen['elapsed-takeover']).toHaveLength(1); // only A's attempt ran
  });

  it('many steps heartbeating cost one statement per flush, not one per heartbeat', async () => {
    const a = await env.pool.create({ ...WL, heartbeatFlushInterval: 200 }, register);
    await a.bootstrap();
    const ids = Array.from({ length: 50 }, (_, i) => `beats-${i}`);
    for (const id of ids) await a.start('beats', {}, { workflowId: id });
    for (const id of ids) await expect(a.result(id, { timeout: '20s' })).resolves.toBe(40);
    const { beats, statements } = writerOf(a).stats;
    expect(beats).toBe(50 * 40);
    // About 1 s of beating at one flush per 200 ms, plus the removals: far below one per beat.
    expect(statements).toBeLessThan(beats / 50);
  });

  it('refuses heartbeat details that are not JSON, at the call', async () => {
    class BadBeat {
      async run(ctx: WorkflowContext) {
        return ctx.step(
          'bad',
          ({ heartbeat }: StepArgs) => {
            try {
              heartbeat({ n: 10n });
              return 'accepted';
            } catch (err) {
              return (err as { code?: string }).code;
            }
          },
          { retry: { maxAttempts: 1 } },
        );
      }
    }
    const a = await env.pool.create(WL, (e) => e.register('bad-beat', BadBeat));
    await a.bootstrap();
    await a.start('bad-beat', {}, { workflowId: 'bad-beat-1' });
    await expect(a.result('bad-beat-1', { timeout: '10s' })).resolves.toBe('WEFT_PAYLOAD_NOT_SERIALIZABLE');
  });
});
