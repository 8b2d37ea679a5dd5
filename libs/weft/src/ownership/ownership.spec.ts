import pg from 'pg';
import type { TestDatabase } from '../../../../test/support/database.js';
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext } from '../common/types.js';
import { Sleepy } from '../../../../test/fixtures/sleepy-workflow.js';

const gates = new Map<string, () => void>();
const ran: Record<string, string[]> = {};

class Gated {
  async run(ctx: WorkflowContext, input: { key: string }) {
    await ctx.step('first', () => 1);
    await ctx.step('gated', ({ signal }) => {
      (ran[input.key] ??= []).push('gated');
      return new Promise<number>((resolve, reject) => {
        gates.set(input.key, () => resolve(2));
        signal.addEventListener('abort', () => reject(new Error('aborted')));
      });
    });
    return 'done';
  }
}

class GatedThenStep extends Gated {
  override async run(ctx: WorkflowContext, input: { key: string }) {
    await super.run(ctx, input);
    return ctx.step('after', () => {
      (ran[input.key] ??= []).push('after');
      return 'after';
    });
  }
}

class AwaitsSignal {
  async run(ctx: WorkflowContext) {
    await ctx.step('first', () => 1);
    const got = await ctx.waitForSignal<number>('go');
    return ctx.step('after', () => got);
  }
}

const WL = { ownership: 'workflow-lease' as const, workflowClaimTtl: 900, workflowClaimRenewInterval: 300 };
const fenceOf = async (tdb: TestDatabase, id: string) =>
  (await tdb.query<{ fence_epoch: string | null }>(`SELECT fence_epoch::text FROM weft.weft_workflows WHERE id = $1`, [id]))[0].fence_epoch;
const claimOf = async (tdb: TestDatabase, id: string) =>
  (
    await tdb.query<{ engine_id: string | null; epoch: string }>(
      `SELECT engine_id, epoch::text FROM weft.weft_workflow_claims WHERE workflow_id = $1`,
      [id],
    )
  )[0];

describe('ownership: per-workflow claims across engines (real PostgreSQL)', () => {
  const env = useTestEngines();
  const warnings: Error[] = [];
  const onWarning = (w: Error) => warnings.push(w);

  const engine = async (id: string, extra = {}) => {
    const e = await env.pool.create({ ...WL, engineId: id, onWarning, ...extra }, (x) =>
      x
        .register('gated', Gated)
        .register('gated-then-step', GatedThenStep)
        .register('sleepy', Sleepy)
        .register('awaits-signal', AwaitsSignal),
    );
    await e.bootstrap();
    return e;
  };

  it('claims a workflow at start, before its code runs; completion clears the fence, and the claim it leaves holds nothing', async () => {
    const a = await engine('A1');
    const h = await a.start('gated', { key: 'k1' });
    await waitFor(() => gates.has('k1'), 'gated step');
    expect(await claimOf(env.tdb, h.workflowId)).toEqual({ engine_id: 'A1', epoch: '1' });
    expect(await fenceOf(env.tdb, h.workflowId)).toBe('1');
    gates.get('k1')!();
    await h.result({ timeout: '5s' });
    // The terminal commit does not write the claim row (docs/decisions/0011): it names its last
    // holder, but the workflow no longer fences at its epoch, so nobody holds it.
    expect(await claimOf(env.tdb, h.workflowId)).toEqual({ engine_id: 'A1', epoch: '1' });
    expect(await fenceOf(env.tdb, h.workflowId)).toBeNull();
    expect(a.ownership.claims.registry!.held.has(h.workflowId)).toBe(false);
    expect(await a.ownership.describe(h.workflowId)).toMatchObject({ holder: null, epoch: '1', expiresAt: null, heldHere: false });
  });

  it('a second engine does not touch a live claim; after the owner disposes it takes the workflow over', async () => {
    const a = await engine('A2');
    const h = await a.start('gated', { key: 'k2' });
    await waitFor(() => gates.has('k2'), 'gated step on A');
    const b = await engine('B2');
    await b.runMaintenance();
    expect((await claimOf(env.tdb, h.workflowId)).engine_id).toBe('A2');
    gates.delete('k2');
    const report = await a.dispose();
    expect(report).toEqual({ released: 1, failed: 0 });
    await waitFor(() => gates.has('k2'), 'gated step re-run on B', 10_000);
    expect(await claimOf(env.tdb, h.workflowId)).toEqual({ engine_id: 'B2', epoch: '2' });
    gates.get('k2')!();
    await expect(b.result(h.workflowId, { timeout: '5s' })).resolves.toBe('done');
  });

  it("a cancel through another engine reaches the owner's code; the running step's late result is never recorded", async () => {
    const a = await engine('A3');
    const b = await engine('B3');
    const h = await a.start('gated', { key: 'k3' });
    await waitFor(() => gates.has('k3'), 'gated step on A');
    await b.cancel(h.workflowId);
    // The owner applies it (docs/cancellation.md): the workflow ends cancelled while its body still runs.
    await waitFor(async () => (await a.describe(h.workflowId)).status === 'cancelled', 'cancelled');
    gates.get('k3')!(); // A's step finishes late: its result is not recorded
    await new Promise((r) => setTimeout(r, 100));
    expect((await a.describe(h.workflowId)).history.map((o) => o.name)).toEqual(['first', 'cancel']);
    expect((await claimOf(env.tdb, h.workflowId)).engine_id).toBe('A3'); // ended by its owner: no takeover
  });

  it('a fenced write from an engine whose claim was taken over is refused and warned about', async () => {
    const a = await engine('A4', { backgroundTasks: 'manual' });
    const h = await a.start('gated', { key: 'k4' });
    await waitFor(() => gates.has('k4'), 'gated step on A');
    const resolveA = gates.get('k4')!;
    // A stalls (manual mode: no renewals); B takes over once the claim expires.
    const b = await engine('B4');
    await waitFor(async () => (await claimOf(env.tdb, h.workflowId)).engine_id === 'B4', 'takeover by B', 10_000);
    await waitFor(() => gates.get('k4') !== resolveA, 'B re-runs the in-flight step');
    resolveA(); // A's late result
    await waitFor(
      () =>
        warnings.some(
          (w) => w.name === 'WeftWorkflowClaimLostWarning' && (w as never as { workflowId: string }).workflowId === h.workflowId,
        ),
      'claim-lost warning',
    );
    gates.get('k4')!();
    await expect(b.result(h.workflowId, { timeout: '5s' })).resolves.toBe('done');
    const ops = await env.tdb.query<{ seq: number }>(`SELECT seq FROM weft.weft_operations WHERE workflow_id = $1 ORDER BY seq`, [
      h.workflowId,
    ]);
    expect(ops.map((o) => o.seq)).toEqual([0, 1]); // recorded once each
    expect(ran.k4).toEqual(['gated', 'gated']);
  });

  it('renewal failing past the TTL pauses a workflow; once renewal confirms the claim it goes on here', async () => {
    const a = await engine('A7');
    const registry = a.ownership.claims.registry!;
    const renew = registry.renewAll.bind(registry);
    let away = false;
    registry.renewAll = () => (away ? Promise.reject(new Error('database away')) : renew());
    const h = await a.start('gated-then-step', { key: 'k7' });
    await waitFor(() => gates.has('k7'), 'gated step running');
    away = true;
    await new Promise((r) => setTimeout(r, 1_200)); // past the 900 ms TTL by A's own clock
    expect(registry.isValid(h.workflowId)).toBe(false);
    gates.get('k7')!(); // the in-flight body ends; its record lands (fenced, nobody took over)
    await new Promise((r) => setTimeout(r, 200));
    expect(registry.held.has(h.workflowId)).toBe(true); // paused before 'after', not given up
    expect((await a.describe(h.workflowId)).history.map((o) => o.name)).toEqual(['first', 'gated']);
    away = false;
    await expect(a.result(h.workflowId, { timeout: '5s' })).resolves.toBe('after');
    // Ended here: the fence is cleared. Epoch 2 only if A7's own reclaim scan took it back after it expired.
    expect(await claimOf(env.tdb, h.workflowId)).toMatchObject({ engine_id: 'A7', epoch: expect.stringMatching(/^[12]$/) });
    expect(await fenceOf(env.tdb, h.workflowId)).toBeNull();
    expect(warnings.some((w) => (w as never as { workflowId?: string }).workflowId === h.workflowId)).toBe(false);
  });

  it('resume(id) of a workflow claimed by another engine throws WorkflowClaimUnavailableError', async () => {
    const a = await engine('A5');
    const b = await engine('B5');
    const h = await a.start('sleepy', { ms: 60_000 });
    await a.suspend(h.workflowId);
    // Someone else holds the claim now (simulated operator tool), as a handover writes it: the claim row and the row's fence.
    await env.tdb.query(
      `WITH c AS (UPDATE weft.weft_workflow_claims SET engine_id = 'X', epoch = epoch + 1, expires_at = now() + interval '1 hour'
                  WHERE workflow_id = $1 RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [h.workflowId],
    );
    await expect(b.resume(h.workflowId)).rejects.toMatchObject({ code: 'WEFT_WORKFLOW_CLAIM_UNAVAILABLE', heldBy: 'X' });
    expect((await b.describe(h.workflowId)).status).toBe('suspended');
  });

  it('a parked workflow whose claim moved discards its timer wake', async () => {
    const a = await engine('A6');
    // Long enough that the claim moves before the sleep is due: its owner fires it on time (local timer).
    const h = await a.start('sleepy', { ms: 2000 });
    await waitFor(
      async () => (await env.tdb.query(`SELECT 1 FROM weft.weft_timers WHERE workflow_id = $1`, [h.workflowId])).length,
      'timer',
    );
    // Handed over elsewhere, as a takeover writes it: the claim row and the row's fence epoch.
    await env.tdb.query(
      `WITH c AS (UPDATE weft.weft_workflow_claims SET epoch = epoch + 1, engine_id = 'X' WHERE workflow_id = $1 RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [h.workflowId],
    );
    await waitFor(
      () =>
        warnings.some(
          (w) =>
            (w.name === 'WeftWorkflowWakeDiscardedWarning' || w.name === 'WeftWorkflowClaimLostWarning') &&
            (w as never as { workflowId: string }).workflowId === h.workflowId,
        ),
      'wake discarded',
      5000,
    );
    expect((await a.describe(h.workflowId)).history).toHaveLength(0);
  });

  it('a parked workflow whose claim moved discards a message wake, judged by the fence epoch read with the message', async () => {
    const a = await engine('A7');
    const h = await a.start('awaits-signal', {});
    // Its first step recorded, the run parks on the signal wait.
    await waitFor(async () => (await a.describe(h.workflowId)).history.length === 1, 'first step');
    await env.tdb.query(
      `WITH c AS (UPDATE weft.weft_workflow_claims SET epoch = epoch + 1, engine_id = 'X' WHERE workflow_id = $1 RETURNING workflow_id, epoch)
       UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
      [h.workflowId],
    );
    await a.signal(h.workflowId, 'go', 7);
    await waitFor(
      () =>
        warnings.some(
          (w) =>
            (w.name === 'WeftWorkflowWakeDiscardedWarning' || w.name === 'WeftWorkflowClaimLostWarning') &&
            (w as never as { workflowId: string }).workflowId === h.workflowId,
        ),
      'message wake discarded',
      5000,
    );
    const messages = await env.tdb.query<{ consumed_seq: number | null }>(
      `SELECT consumed_seq FROM weft.weft_messages WHERE workflow_id = $1`,
      [h.workflowId],
    );
    expect(messages).toEqual([{ consumed_seq: null }]);
    expect((await a.describe(h.workflowId)).history).toHaveLength(1);
  });

  it("a takeover that commits while the owner's commit waits for the row stops the owner at its reload, before its next step body", async () => {
    const a = await engine('A8');
    const h = await a.start('gated-then-step', { key: 'k8' });
    await waitFor(() => gates.has('k8'), 'gated step on A');
    const t1 = new pg.Client({ connectionString: env.tdb.url });
    t1.on('error', () => undefined);
    await t1.connect();
    try {
      // A takeover by X, held open: it has the workflow row locked.
      await t1.query('BEGIN');
      await t1.query(
        `WITH c AS (UPDATE weft.weft_workflow_claims SET epoch = epoch + 1, engine_id = 'X', expires_at = now() + interval '1 hour'
                    WHERE workflow_id = $1 RETURNING workflow_id, epoch)
         UPDATE weft.weft_workflows w SET fence_epoch = c.epoch FROM c WHERE w.id = c.workflow_id`,
        [h.workflowId],
      );
      const pid = (await t1.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
      gates.get('k8')!(); // A's commit of the gated step now waits for the row
      await waitFor(
        async () =>
          (
            await env.tdb.query(
              `SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1`,
              [pid],
            )
          ).length > 0,
        "A's commit waiting for the row",
      );
      await t1.query('COMMIT');
    } finally {
      await t1.end();
    }
    // Refused on the row's latest version; the statement's snapshot reads it as a version
    // conflict, so A reloads, sees the new fence epoch and lets the workflow go.
    await waitFor(
      () =>
        warnings.some(
          (w) => w.name === 'WeftWorkflowClaimLostWarning' && (w as never as { workflowId: string }).workflowId === h.workflowId,
        ),
      'claim-lost warning',
    );
    expect(ran.k8).toEqual(['gated']); // the next step body never started on A
    expect((await a.describe(h.workflowId)).history.map((o) => o.name)).toEqual(['first']);
  });
});
