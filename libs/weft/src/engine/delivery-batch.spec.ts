// Messages that arrive together: a run applies them the way a replay releases them. A replay lets
// the workflow code run to its next wait after each release, so a live run that resolved a wait
// must let the code go on before it applies the next message of the same batch (delivery.ts).
import { useTestEngines, waitFor } from '../../../../test/support/engine.js';
import type { WorkflowContext, WorkflowDefinition } from '../common/types.js';
import { notifyChannel } from '../storage/repositories/message.repository.js';
import { WorkflowReplayer } from './replayer.js';

/** Waits for 'go', then for an 'add' to have been handled, then for 'finish'. */
class GoThenAdd {
  private got: string[] = [];
  onAdd(p: string) {
    this.got.push(p);
  }
  async run(ctx: WorkflowContext) {
    await ctx.step('first', () => 1);
    const go = await ctx.waitForSignal<string>('go', { timeout: '60s' });
    await ctx.condition(() => this.got.length >= 1, { timeout: '60s' });
    await ctx.waitForSignal('finish', { timeout: '60s' });
    return { go, got: this.got };
  }
}

const def: WorkflowDefinition = { name: 'go-then-add', factory: () => new GoThenAdd() as never, signalHandlers: { add: 'onAdd' } };

describe('a batch of messages that resolves a wait (real PostgreSQL)', () => {
  const env = useTestEngines();

  /** Both messages in one transaction, so one inbox read takes them together. */
  async function sendTogether(id: string) {
    await env.tdb.query(
      `WITH ins AS (INSERT INTO weft.weft_messages (workflow_id, kind, name, payload)
                    VALUES ($1, 'signal', 'go', '"g"'::json), ($1, 'signal', 'add', '"a"'::json) RETURNING workflow_id)
       SELECT pg_notify($2, (SELECT workflow_id FROM ins LIMIT 1))`,
      [id, notifyChannel('weft')],
    );
  }

  it('records a history that replays: the code takes its next seq before the rest of the batch', async () => {
    const a = await env.pool.create({ ownership: 'workflow-lease', engineId: 'A' }, (e) => e.register(def));
    await a.bootstrap();
    const h = await a.start('go-then-add', {}, { workflowId: 'batch-1' });
    await waitFor(async () => (await a.describe(h.workflowId)).history.some((o) => o.name === 'first'), 'first step recorded');
    // Parked in waitForSignal('go'): the two messages arrive in one batch.
    await sendTogether(h.workflowId);
    await waitFor(async () => (await a.describe(h.workflowId)).history.some((o) => o.kind === 'condition'), 'condition resolved');
    const described = await a.describe(h.workflowId);
    const report = await new WorkflowReplayer([def]).replay({ ...described, type: 'go-then-add' });
    expect(report, JSON.stringify(described.history.map((o) => [o.seq, o.kind, o.name, o.event]))).toMatchObject({ ok: true });
    // Another engine takes the run over by replaying the same history, then finishes it.
    await a.dispose();
    const b = await env.pool.create(
      { ownership: 'workflow-lease', engineId: 'B', workflowClaimTtl: '1s', workflowClaimRenewInterval: '250ms' },
      (e) => e.register(def),
    );
    await b.bootstrap();
    await b.signal(h.workflowId, 'finish', null);
    await expect(b.handle(h.workflowId).result({ timeout: '20s' })).resolves.toEqual({ go: 'g', got: ['a'] });
    expect((await b.describe(h.workflowId)).status).toBe('completed');
  });
});
