import { resolveRetry } from './retry.js';
import { runAttempts } from './run/step-runner.js';

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
});
