import { resolveRetry } from './retry.js';
import { runAttempts } from './run/step-runner.js';
import { StepProgress } from './run/step-progress.js';

describe('runAttempts (pure logic)', () => {
  const opts = (mayStart: () => boolean) => ({
    name: 's',
    idempotencyKey: 'w:0',
    retry: resolveRetry({ maxAttempts: 3, initialInterval: 1 }),
    signal: new AbortController().signal,
    mayStart,
  });

  it('checks ownership in the microtask that starts the body, after everything queued before it', async () => {
    let allowed = true;
    const ran: string[] = [];
    const pending = runAttempts(
      () => ran.push('body'),
      opts(() => allowed),
    );
    // Work queued after the attempt began (e.g. other runs resuming after a pause) revokes it
    // before the body's first line: the body must not run.
    allowed = false;
    await expect(pending).resolves.toEqual({ ok: false, aborted: true, attempts: 0 });
    expect(ran).toEqual([]);
  });

  it('runs the body and retries while ownership holds', async () => {
    let calls = 0;
    const out = await runAttempts(
      () => {
        if (++calls < 3) throw new Error('flaky');
        return 'ok';
      },
      opts(() => true),
    );
    expect(out).toEqual({ ok: true, value: 'ok', attempts: 3 });
  });

  it("a step out of retry.maxElapsed because its backoff ended late fails with the last attempt's error as the cause", async () => {
    // The backoff's timer fires past the deadline (a loaded machine): the next attempt is never begun.
    let t = 0;
    const clock = {
      now: () => t,
      setTimer: (fn: () => void, ms: number) => {
        t += ms + 5_000;
        setImmediate(fn);
        return { clear: () => undefined };
      },
    };
    const out = await runAttempts(
      () => {
        throw new Error('still down');
      },
      {
        ...opts(() => true),
        retry: resolveRetry({ maxAttempts: 1000, initialInterval: 20, maxInterval: 20, maxElapsed: 2000 }),
        clock,
        // As in the engine: the step's progress keeps its first start, which the deadline counts from.
        progress: new StepProgress('w', 1, 0, 's', { save: () => undefined, forget: () => undefined }, 1024),
      },
    );
    expect(out).toMatchObject({ ok: false, attempts: 1, error: { name: 'StepMaxElapsedError', maxElapsedMs: 2000 } });
    expect(((out as { error: Error }).error.cause as Error).message).toBe('still down');
  });

  it('a step run without a StepProgress counts retry.maxElapsed from its first attempt, not from each one', async () => {
    // Each attempt takes 1 s of workflow time: the second one ends past the 2 s deadline, so no third
    // begins. A deadline counted from each attempt's start would move on with it and never bind.
    let t = 0;
    const clock = {
      now: () => t,
      setTimer: (fn: () => void, ms: number) => {
        t += ms;
        setImmediate(fn);
        return { clear: () => undefined };
      },
    };
    const out = await runAttempts(
      () => {
        t += 1000;
        throw new Error('still down');
      },
      {
        ...opts(() => true),
        retry: resolveRetry({ maxAttempts: 1000, initialInterval: 20, maxInterval: 20, maxElapsed: 2000 }),
        clock,
      },
    );
    expect(out).toMatchObject({ ok: false, attempts: 2, error: { name: 'StepMaxElapsedError', maxElapsedMs: 2000 } });
    expect(((out as { error: Error }).error.cause as Error).message).toBe('still down');
  });
});
