import { quietLogger, useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';

const bodies: Record<string, number> = {};
/** The first body of `a` waits until the test ends it; later ones return at once. */
const gates = new Map<string, () => void>();

class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('a', () => {
      bodies[input.key] = (bodies[input.key] ?? 0) + 1;
      if (bodies[input.key] > 1) return 1;
      return new Promise<number>((resolve) => gates.set(input.key, () => resolve(1)));
    });
    return 'done';
  }
}

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: '3s' as const, workflowClaimRenewInterval: '1s' as const };

describe('a workflow this engine holds is driven again when loading it fails (real PostgreSQL)', () => {
  const env = useTestEngines();

  /** Makes every load of a workflow fail (its statement reads weft_timers) until the returned function runs. */
  async function loadsFail(): Promise<() => Promise<void>> {
    await env.tdb.query('ALTER TABLE weft.weft_timers RENAME TO weft_timers_away');
    return async () => void (await env.tdb.query('ALTER TABLE weft.weft_timers_away RENAME TO weft_timers'));
  }

  it('resume: the resume is committed, its load fails; the engine keeps the claim and drives the run once loads work again', async () => {
    // Chaos seed 446895: a PostgreSQL restart right after a resume committed left the workflow
    // `running` with its claim renewed by the resuming engine and no run anywhere, for good.
    const e = await env.pool.create({ ...WL, logger: quietLogger() }, (x) => x.register('gated', Gated));
    await e.bootstrap();
    const h = await e.start('gated', { key: 'resume' });
    await waitFor(() => gates.has('resume'), 'the first body running');
    await e.suspend(h.workflowId, 'for the test');
    gates.get('resume')!(); // its result is refused: the run was suspended
    const restore = await loadsFail();
    try {
      await expect(e.resume(h.workflowId)).resolves.toBeUndefined();
      expect(await h.status()).toBe('running');
    } finally {
      await restore();
    }
    await expect(h.result({ timeout: '20s' })).resolves.toBe('done');
  });
});
