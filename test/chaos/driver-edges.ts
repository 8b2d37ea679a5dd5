// The client side of issue #32's edge shapes (driver.ts runs them): a continue-as-new chain's
// messages timed around its switches, a cancel of a busy workflow, and an id purged once it
// completed and started again.
import type { CancelOutcome, Driver } from './driver.js';
import { delay } from './util.js';
import type { PlannedWorkflow } from './workload.js';

/** A 'chain' message as the client saw it: acknowledged (accepted) or not, and in how many attempts. */
export interface ChainSend {
  token: string;
  kind: 'signal' | 'update';
  acked: boolean;
  attempts: number;
}

/** A 'reuse' workflow's script: its first start, its end, the purge and the second start. */
export interface ReuseOutcome {
  firstStarted: boolean;
  firstEnded: string | null;
  purged: boolean;
  purgeAttempts: number;
  secondStarted: boolean;
}

/**
 * 'busycancel', 'cancelcleanup': a cancel through a random engine a seeded while after the start,
 * while a long step runs.
 */
export async function busyCancel(d: Driver, w: PlannedWorkflow): Promise<void> {
  await delay(w.busyCancelAfterMs ?? 0);
  const rec: CancelOutcome = { starter: null, engine: null, sentAt: Date.now(), outcome: 'gave-up', attempts: 0 };
  (w.shape === 'cancelcleanup' ? d.cleanupCancels : d.busyCancels).set(w.id, rec);
  await d.cancelUntilAnswered(w.id, rec, 'chaos: cancel of a busy workflow');
  if (rec.outcome === 'gave-up' && !d.isStopped) d.anomalies.add('busy_cancel_gave_up', { workflowId: w.id, ...rec });
}

/** 'chain': its signals and updates in the planned order and pauses, landing around its switches. */
export async function chainScript(d: Driver, w: PlannedWorkflow): Promise<void> {
  const sends: ChainSend[] = [];
  d.chains.set(w.id, sends);
  for (const m of w.chainMessages) {
    if (d.isStopped) return;
    await delay(m.afterMs);
    const rec: ChainSend = { token: m.token, kind: m.kind, acked: false, attempts: 0 };
    sends.push(rec);
    const payload = { token: m.token, value: m.value };
    if (m.kind === 'signal') rec.acked = await d.sendSignal(w.id, 'add', payload, rec);
    else rec.acked = (await d.sendUpdate(w.id, m.token, payload, rec)) !== undefined;
  }
}

/**
 * 'reuse': start (gen 1), wait until it completed, purge it through an engine, start the same id
 * again (the planned gen 2), which must run afresh.
 */
export async function reuseScript(d: Driver, w: PlannedWorkflow): Promise<void> {
  const rec: ReuseOutcome = { firstStarted: false, firstEnded: null, purged: false, purgeAttempts: 0, secondStarted: false };
  d.reuses.set(w.id, rec);
  const first = { ...w.input, gen: 1 };
  rec.firstStarted = (await d.call({ op: 'start', type: w.type, workflowId: w.id, payload: first })) !== undefined;
  if (!rec.firstStarted) return;
  d.started.add(w.id);
  const deadline = Date.now() + 300_000;
  while (!d.isStopped && Date.now() < deadline) {
    const status = await d.statusOf(w.id);
    if (status !== null && !['pending', 'enqueued', 'running', 'suspended'].includes(status)) {
      rec.firstEnded = status;
      break;
    }
    await delay(200);
  }
  if (!rec.firstEnded) return;
  for (let attempt = 0; !d.isStopped && Date.now() < deadline; attempt++) {
    const e = d.engineFor('purge');
    if (!e) {
      await delay(100);
      continue;
    }
    rec.purgeAttempts++;
    const t = await d.tryOn(e, { op: 'purge', workflowId: w.id }, attempt);
    // Not found: an earlier attempt whose reply was lost purged it.
    if (t.ok || t.name === 'WorkflowNotFoundError') {
      rec.purged = true;
      break;
    }
    await delay(Math.min(100 * 2 ** Math.min(attempt, 4), 1000));
  }
  if (!rec.purged) return;
  rec.secondStarted = (await d.call({ op: 'start', type: w.type, workflowId: w.id, payload: w.input })) !== undefined;
}
