// A port, written for Weft, of Temporal's samples-typescript `activities-cancellation-heartbeating`:
// an activity that counts its progress to 100, heartbeating each step and resuming after the last
// heartbeat it finds, and a workflow that awaits it and lets a cancel through. Temporal's
// CancelledFailure inside the activity is the step's `signal` aborting here; the workflow's
// `isCancellation(err)` is `err instanceof WorkflowCancelledError`; the client's assertion
// (`result()` rejects with WorkflowFailedError whose cause is the cancellation) is kept. The
// sample sets `cancellationType: WAIT_CANCELLATION_COMPLETED`; Weft rejects the workflow's await
// at once (Temporal's TRY_CANCEL) and aborts the body in the same turn, so the body's cleanup runs
// before the workflow's end is written (checked below). The sample ships no test: these cases
// check what its client and README describe.
import { currentStep, WorkflowCancelledError, WorkflowFailedError, type StepArgs, type WeftEngine, type WorkflowContext } from '@weft/nest';
import { useTestEngines, waitFor } from '../support/engine.js';

/** What the activity and the workflow logged, by workflow id. */
const logs: Record<string, string[]> = {};
const log = (id: string, line: string) => void (logs[id] ??= []).push(line);
/** The progress values the activity heartbeated, by workflow id. */
const beats: Record<string, number[]> = {};

/** The activity's `sleep`: throws once the step is cancelled (Temporal's activity sleep does). */
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason as Error);
    };
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** fakeProgress(sleepIntervalMs): counts to 100, heartbeating each value; resumes after the last heartbeat. */
async function fakeProgress(workflowId: string, sleepIntervalMs: number, { signal }: StepArgs): Promise<void> {
  const step = currentStep()!;
  try {
    const startingPoint = (step.lastHeartbeat as number | undefined) ?? 1;
    log(workflowId, `Starting activity at progress ${startingPoint}`);
    for (let progress = startingPoint; progress <= 100; ++progress) {
      await sleep(sleepIntervalMs, signal);
      step.heartbeat(progress);
      (beats[workflowId] ??= []).push(progress);
    }
  } catch (err) {
    if (signal.aborted && signal.reason instanceof WorkflowCancelledError) {
      log(workflowId, 'Fake progress activity cancelled');
      // Cleanup
    }
    throw err;
  }
}

/** runCancellableActivity: startToCloseTimeout 60s, heartbeatTimeout 3s. */
class RunCancellableActivity {
  async run(ctx: WorkflowContext, input: { sleepIntervalMs: number }) {
    try {
      await ctx.step('fakeProgress', (args: StepArgs) => fakeProgress(ctx.workflowId, input.sleepIntervalMs, args), {
        timeout: '60s',
        heartbeatTimeout: '3s',
      });
    } catch (err) {
      if (err instanceof WorkflowCancelledError) {
        log(ctx.workflowId, 'Workflow cancelled along with its activity');
        // To clean up use ctx.nonCancellable
      }
      throw err;
    }
  }
}

const register = (e: WeftEngine) => e.register('runCancellableActivity', RunCancellableActivity);
const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300, heartbeatFlushInterval: 50 };

describe("Temporal's activities-cancellation-heartbeating sample, ported to Weft", () => {
  const env = useTestEngines();

  it('cancel while the activity runs: the activity sees it, and result() throws WorkflowFailedError caused by the cancellation', async () => {
    const client = await env.pool.create(WL, register);
    await client.bootstrap();
    const handle = await client.start('runCancellableActivity', { sleepIntervalMs: 20 }, { workflowId: 'cancellation-heartbeating-0' });
    // The sample's client waits a while (40 s of its 100); cancel may be called at any time.
    await waitFor(() => (beats['cancellation-heartbeating-0']?.length ?? 0) >= 5, 'some progress');
    await handle.cancel();
    const err = await handle.result().catch((e: unknown) => e);
    // The sample's assertion: WorkflowFailedError whose cause is the cancellation.
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(WorkflowCancelledError);
    expect((err as WorkflowFailedError).cause).toMatchObject({ code: 'WEFT_WORKFLOW_CANCELLED' });
    expect(await handle.status()).toBe('cancelled');
    // The activity confirmed the cancellation (its cleanup ran) before the workflow ended.
    expect(logs['cancellation-heartbeating-0']).toEqual([
      'Starting activity at progress 1',
      'Fake progress activity cancelled',
      'Workflow cancelled along with its activity',
    ]);
    const done = beats['cancellation-heartbeating-0'].length;
    expect(done).toBeLessThan(100);
    // It heartbeats no more: the step was not recorded, and its saved progress goes.
    await waitFor(
      async () =>
        (await env.tdb.query(`SELECT 1 FROM weft.weft_step_progress WHERE workflow_id = 'cancellation-heartbeating-0'`)).length === 0,
      'the saved progress removed',
    );
    expect(beats['cancellation-heartbeating-0']).toHaveLength(done);
    expect((await client.describe(handle.workflowId)).history.map((o) => o.kind)).toEqual(['cancelRequested']);
  });

  it('resumes from its last heartbeat on another worker, and is cancelled there', async () => {
    const a = await env.pool.create({ ...WL, engineId: 'A' }, register);
    await a.bootstrap();
    const id = 'cancellation-heartbeating-1';
    await a.start('runCancellableActivity', { sleepIntervalMs: 20 }, { workflowId: id });
    const saved: number = await waitFor(async () => {
      const [row] = await env.tdb.query<{ details: number }>(`SELECT details FROM weft.weft_step_progress WHERE workflow_id = $1`, [id]);
      return row && row.details >= 10 ? row.details : 0;
    }, 'progress saved');
    await a.dispose(); // the worker goes away mid-activity
    const b = await env.pool.create({ ...WL, engineId: 'B' }, register);
    await b.bootstrap();
    await waitFor(() => logs[id]?.length === 2, 'the activity started again on B');
    const resumedAt = Number(/progress (\d+)/.exec(logs[id][1])![1]);
    expect(resumedAt).toBeGreaterThanOrEqual(saved); // from its last heartbeat, at most one flush old
    await waitFor(() => (beats[id]?.filter((p) => p > resumedAt).length ?? 0) >= 3, 'progress on B');
    await b.cancel(id);
    const err = await b.result(id).catch((e: unknown) => e);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(WorkflowCancelledError);
    expect(logs[id].slice(2)).toEqual(['Fake progress activity cancelled', 'Workflow cancelled along with its activity']);
  });
});
