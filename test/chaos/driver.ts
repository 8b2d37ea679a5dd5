// The client side of the workload: starts the planned workflows through the engines, then sends
// each its signals and updates and queries it, like application code calling the engine API on
// whichever replica it reaches. Engines die, stop and lose the database under it, so every call
// retries elsewhere; a retried signal or update is first looked up in the database, so a send that
// landed before its reply was lost is not repeated (handlers de-duplicate by token anyway).
import type { HarnessDb } from './db';
import { EngineExitedError, Fleet } from './engines';
import { between, delay, Rng, Tally } from './util';
import type { PlannedWorkflow } from './workload';

export interface DriverOptions {
  /** Starts are spread over this window (soak: also bounded by maxActive). */
  startWindowMs: number;
  maxInFlightCalls: number;
  /** Most started, unfinished top-level workflows at once. */
  maxActive: number;
  /** Pause between a workflow's messages (ms range). */
  messageGapMs: [number, number];
  updateTimeoutMs: number;
  /** Chance of a query after each acknowledged signal or update. */
  queryChance: number;
}

type Cmd = Record<string, unknown> & { op: string };

export class Driver {
  readonly calls = new Tally(0);
  readonly callErrors = new Tally(3);
  /** Anomalies seen by the client (not invariant violations). */
  readonly anomalies = new Tally(5);
  /** Update results by workflow, in acknowledgement order. */
  readonly updateResults = new Map<string, number[]>();
  readonly started = new Set<string>();
  /** Each workflow's client calls: when, to which engine, with what outcome (first 12). */
  readonly log = new Map<string, Array<{ at: number; what: string }>>();
  private stopped = false;
  private inFlight = 0;
  private readonly scripts: Promise<void>[] = [];

  constructor(
    private readonly fleet: Fleet,
    private readonly db: HarnessDb,
    private readonly weft: string,
    private readonly o: DriverOptions,
    private readonly r: Rng,
    private readonly activeCount: () => number,
  ) {}

  stop(): void {
    this.stopped = true;
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  /** Starts every top-level workflow (paced), runs their message scripts; resolves when all scripts end. */
  async run(plan: PlannedWorkflow[]): Promise<void> {
    const top = plan.filter((w) => w.parentId === null);
    const t0 = Date.now();
    const spacing = this.o.startWindowMs / Math.max(1, top.length);
    for (let i = 0; i < top.length && !this.stopped; i++) {
      await delay(t0 + i * spacing - Date.now());
      while (!this.stopped && (this.inFlight >= this.o.maxInFlightCalls || this.activeCount() + this.inFlight >= this.o.maxActive)) {
        await delay(20);
      }
      this.scripts.push(this.lifecycle(top[i]));
    }
    await Promise.all(this.scripts);
  }

  private async lifecycle(w: PlannedWorkflow): Promise<void> {
    const ok = await this.call({ op: 'start', type: w.type, workflowId: w.id, payload: w.input });
    if (ok === undefined) return;
    this.started.add(w.id);
    if (w.shape === 'signals') await this.signalScript(w);
    if (w.shape === 'updates') await this.updateScript(w);
  }

  private gap(): Promise<void> {
    return delay(between(this.r, this.o.messageGapMs[0], this.o.messageGapMs[1]));
  }

  private async signalScript(w: PlannedWorkflow): Promise<void> {
    for (const s of w.signals) {
      if (this.stopped) return;
      await this.gap();
      await this.sendSignal(w.id, 'add', { token: s.token, value: s.value });
      await this.maybeQuery(w.id, 0);
    }
    await this.gap();
    await this.sendSignal(w.id, 'finish', { token: `${w.id}:finish`, value: w.finishValue });
  }

  private async updateScript(w: PlannedWorkflow): Promise<void> {
    const results: number[] = [];
    this.updateResults.set(w.id, results);
    for (const token of w.updates) {
      if (this.stopped) return;
      await this.gap();
      const v = await this.sendUpdate(w.id, token);
      if (v === undefined) return;
      results.push(v);
      await this.maybeQuery(w.id, results.length);
    }
  }

  private async sendSignal(workflowId: string, name: string, payload: { token: string; value: number }): Promise<void> {
    const landed = async () => {
      const rows = await this.db.query(
        `SELECT 1 FROM ${this.weft}.weft_messages WHERE workflow_id = $1 AND kind = 'signal' AND name = $2 AND payload->>'token' = $3 LIMIT 1`,
        [workflowId, name, payload.token],
      );
      return rows.length ? true : undefined;
    };
    await this.call({ op: 'signal', workflowId, name, payload }, landed);
  }

  private async sendUpdate(workflowId: string, token: string): Promise<number | undefined> {
    const v = await this.call({ op: 'update', workflowId, name: 'bump', payload: { token }, timeoutMs: this.o.updateTimeoutMs }, () =>
      this.updateOutcome(workflowId, token),
    );
    return v === undefined ? undefined : Number(v);
  }

  /** The result of an update request with this token, if one was applied; waits out a pending one. */
  private async updateOutcome(workflowId: string, token: string): Promise<unknown> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const rows = await this.db.query<{ status: string; result: { value?: unknown } | null }>(
        `SELECT status, result FROM ${this.weft}.weft_messages WHERE workflow_id = $1 AND kind = 'update' AND payload->>'token' = $2 ORDER BY id`,
        [workflowId, token],
      );
      const done = rows.find((r) => r.status === 'done');
      if (done) return done.result?.value;
      if (!rows.some((r) => r.status === 'pending') || Date.now() > deadline || this.stopped) return undefined;
      await delay(200);
    }
  }

  private async maybeQuery(workflowId: string, ackedUpdates: number): Promise<void> {
    if (this.r() >= this.o.queryChance) return;
    const e = this.fleet.pickLive();
    if (!e) return;
    this.calls.add('query');
    try {
      const v = (await e.call({ op: 'query', workflowId, name: 'status' })) as { counter?: number };
      this.calls.add('query.ok');
      if (ackedUpdates > 0 && (v?.counter ?? 0) < ackedUpdates) {
        const at = new Date().toISOString();
        this.anomalies.add('query_behind_acknowledged_update', {
          workflowId,
          engine: e.engineId,
          at,
          answered: v,
          acknowledged: ackedUpdates,
        });
      }
    } catch (err) {
      this.callErrors.add(`query:${(err as Error).name}`, `${e.engineId}: ${(err as Error).message.slice(0, 300)}`);
    }
  }

  private note(cmd: Cmd, sent: number, outcome: string): void {
    const id = String(cmd.workflowId);
    const list = this.log.get(id) ?? [];
    if (list.length >= 12) return;
    list.push({ at: sent, what: `${cmd.op}${cmd.name ? ` ${String(cmd.name)}` : ''} sent to ${outcome} after ${Date.now() - sent} ms` });
    this.log.set(id, list);
  }

  /**
   * One client call with retries on any engine. Before each retry `landed` (if given) checks
   * whether an earlier attempt took effect; its non-undefined value is then the result.
   */
  private async call(cmd: Cmd, landed?: () => Promise<unknown>): Promise<unknown> {
    let notRunning = 0;
    for (let attempt = 0; !this.stopped; attempt++) {
      if (attempt > 0 && landed) {
        const v = await landed().catch(() => undefined);
        if (v !== undefined) {
          this.calls.add(`${cmd.op}.landed-before-retry`);
          return v;
        }
      }
      const e = this.fleet.pickLive();
      if (!e) {
        await delay(100);
        continue;
      }
      this.inFlight++;
      this.calls.add(attempt ? `${cmd.op}.retry` : cmd.op);
      const sent = Date.now();
      try {
        const v = await e.call(cmd);
        this.calls.add(`${cmd.op}.ok`);
        this.note(cmd, sent, `${e.engineId} ok`);
        return v ?? true;
      } catch (err) {
        const name = (err as Error).name;
        this.note(cmd, sent, `${e.engineId} ${name}: ${(err as Error).message.slice(0, 120)}`);
        if (!(err instanceof EngineExitedError)) {
          this.callErrors.add(`${cmd.op}:${name}`, `${e.engineId}: ${(err as Error).message.slice(0, 300)}`);
        } else this.callErrors.add(`${cmd.op}:EngineExited`);
        if (name === 'WorkflowNotRunningError' && ++notRunning >= 3) {
          this.anomalies.add(`${cmd.op}_refused_workflow_not_running`, { cmd, message: (err as Error).message });
          return undefined;
        }
        await delay(Math.min(100 * 2 ** Math.min(attempt, 5), 2000));
      } finally {
        this.inFlight--;
      }
    }
    return undefined;
  }
}
