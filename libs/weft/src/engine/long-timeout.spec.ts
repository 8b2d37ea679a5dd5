import { stat } from 'node:fs';
import { waitFor } from '../../../../test/support/engine.js';
import { resolveRetry } from './retry.js';
import { runAttempts } from './run/step-runner.js';
import { MAX_TIMEOUT_MS } from './long-timeout.js';
import { TimerLoop } from './timer-loop.js';

/** A started TimerLoop whose tick errors fail the test. */
function startedLoop(tick: () => Promise<void>, intervalMs: number): TimerLoop {
  const loop = new TimerLoop(tick, intervalMs, (err) => {
    throw err;
  });
  loop.start();
  return loop;
}

// Node's setTimeout fires after 1 ms for delays above 2^31-1 ms; these would pass with it.
describe('waits longer than setTimeout can hold (pure logic)', () => {
  const past = MAX_TIMEOUT_MS + 60_000;

  it('a step timeout past 2^31-1 ms does not time the attempt out at once', async () => {
    const out = await runAttempts(() => new Promise((r) => setTimeout(() => r('done'), 20)), {
      name: 's',
      idempotencyKey: 'w:0',
      retry: resolveRetry({ maxAttempts: 1 }),
      timeoutMs: past,
      signal: new AbortController().signal,
    });
    expect(out).toEqual({ ok: true, value: 'done', attempts: 1 });
  });

  it('a retry delay past 2^31-1 ms does not retry at once', async () => {
    const abort = new AbortController();
    let calls = 0;
    const pending = runAttempts(
      () => {
        if (++calls === 1) throw new Error('flaky');
        return 'second';
      },
      {
        name: 's',
        idempotencyKey: 'w:0',
        retry: resolveRetry({ maxAttempts: 2, initialInterval: past * 2, maxInterval: past * 2 }),
        signal: abort.signal,
      },
    );
    // The retry must still be waiting when the run is aborted 50 ms later.
    setTimeout(() => abort.abort(), 50);
    await expect(pending).resolves.toEqual({ ok: false, aborted: true, attempts: 1 });
    expect(calls).toBe(1);
  });

  it('the timer loop keeps its interval after a nudge for a far-off timer during a tick', async () => {
    let ticks = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const loop = startedLoop(async () => {
      if (++ticks === 1) await gate;
    }, 20);
    try {
      await waitFor(() => ticks === 1, 'the first tick', 2_000, 1);
      loop.nudgeAt(Date.now() + 3_600_000); // a workflow went to sleep for an hour mid-tick
      release();
      await waitFor(() => ticks >= 3, 'two more ticks on the 20 ms interval', 2_000);
    } finally {
      await loop.stop();
    }
  });

  it('a nudge later than the tick already scheduled gets a tick of its own after it', async () => {
    const at: number[] = [];
    const loop = startedLoop(async () => void at.push(Date.now()), 60_000);
    try {
      await waitFor(() => at.length === 1, 'the first tick', 2_000, 1);
      const now = Date.now();
      loop.nudgeAt(now + 50); // a delayed start...
      loop.nudgeAt(now + 150); // ...and another one, due after the tick the first one scheduled
      // A tick at or after the later nudge, not the 60 s interval. On a loaded machine the first
      // nudge's tick may itself come after now + 150 and serve both: counting ticks would flake.
      await waitFor(() => at.some((t) => t >= now + 150), 'a tick at or after each nudge', 5_000);
    } finally {
      await loop.stop();
    }
  });

  it('a nudge due now ticks at the end of the turn, not a 0 ms setTimeout later', async () => {
    const order: string[] = [];
    const loop = startedLoop(async () => void order.push('tick'), 60_000);
    try {
      await waitFor(() => order.length === 1, 'the first tick', 2_000, 1);
      order.length = 0;
      // From an I/O callback, as a nudge from a commit's answer is: from a timer's callback, a
      // 0 ms timeout set on a busy machine is already due before the turn ends, and runs first.
      await new Promise<void>((done) =>
        stat(process.cwd(), () => {
          setTimeout(() => order.push('timeout'), 0);
          loop.nudgeAt(Date.now()); // a freed queue slot asking for an admission pass
          done();
        }),
      );
      await waitFor(() => order.length === 2, 'the tick and the timeout', 2_000, 1);
      expect(order).toEqual(['tick', 'timeout']);
    } finally {
      await loop.stop();
    }
  });
});
