import { useTestEngines } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { resolveOwnership } from '../ownership/config.js';
import { backoffDelay, resolveRetry } from './retry.js';

const OUTAGE_MS = 2_000;

/** The step's dependency (a database, an API) restarts: it refuses connections for two seconds. */
class CallsFlakyDependency {
  async run(ctx: WorkflowContext) {
    let downUntil = 0;
    return ctx.step('call', ({ attempt }) => {
      if (attempt === 1) downUntil = Date.now() + OUTAGE_MS;
      if (Date.now() < downUntil) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
      return { attempt };
    });
  }
}

describe('the default step retry (docs/decisions/0012-default-step-retry.md)', () => {
  const env = useTestEngines();

  it('waits, even with the least jitter, at least the default claim TTL before its last attempt', () => {
    const r = resolveRetry(undefined);
    let waited = 0;
    for (let attempt = 1; attempt < r.maxAttempts; attempt++) waited += backoffDelay(r, attempt, () => 0);
    expect(waited).toBeGreaterThanOrEqual(resolveOwnership({ ownership: 'workflow-lease' }).ttlMs);
  });

  it('rides out a dependency that is away for two seconds: the workflow completes', async () => {
    const engine = await env.pool.create({}, (e) => e.register('flaky-dependency', CallsFlakyDependency));
    const h = await engine.start('flaky-dependency', null);
    const out = await h.result<{ attempt: number }>({ timeout: '60s' });
    expect(out.attempt).toBeGreaterThan(1);
    expect((await engine.describe(h.workflowId)).history[0]).toMatchObject({ name: 'call', status: 'completed', attempts: out.attempt });
  });
});
