import { Registry } from 'prom-client';
import { WeftMetrics } from './metrics.js';

describe('WeftMetrics', () => {
  it('pre-initialises every claim outcome at 0 on a private registry', async () => {
    const m = new WeftMetrics();
    const text = await m.metrics();
    for (const outcome of ['acquired', 'takeover', 'lost_race', 'deposed', 'backoff_skipped']) {
      expect(text).toContain(`weft_workflow_claim_attempts_total{outcome="${outcome}"} 0`);
    }
    expect(m.contentType).toMatch(/^text\/plain/);
  });

  it('records what the engine reports, without minting unknown outcome labels', async () => {
    const m = new WeftMetrics();
    m.workflowStarted('order');
    m.workflowFinished('order', 'completed');
    m.stepDuration(0.2);
    m.stepDuration(Number.NaN);
    m.claimAttempt('acquired');
    m.claimAttempt('bogus' as never);
    m.claimsActive(3);
    m.renewalFailure();
    m.renewalPassDuration(0.004);
    m.parked(7);
    const text = await m.metrics();
    expect(text).toContain('weft_workflows_started_total{type="order"} 1');
    expect(text).toContain('weft_workflows_finished_total{type="order",status="completed"} 1');
    expect(text).toContain('weft_step_duration_seconds_count 1');
    expect(text).toContain('weft_workflow_claim_attempts_total{outcome="acquired"} 1');
    expect(text).not.toContain('bogus');
    expect(text).toContain('weft_workflow_claims_active 3');
    expect(text).toContain('weft_workflow_claim_renewal_failures_total 1');
    expect(text).toContain('weft_renewal_pass_duration_seconds_count 1');
    expect(text).toContain('weft_workflows_parked 7');
  });

  it('shares an app registry: a second instance re-uses the metrics instead of failing', async () => {
    const registry = new Registry();
    const a = new WeftMetrics({ registry });
    const b = new WeftMetrics({ registry });
    a.workflowStarted('x');
    b.workflowStarted('x');
    expect(await registry.metrics()).toContain('weft_workflows_started_total{type="x"} 2');
  });
});
