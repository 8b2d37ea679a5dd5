// The client side of the workload: starts the planned workflows through the engines, then sends
// each its signals and updates and queries it, like application code calling the engine API on
// whichever replica it reaches. Engines die, stop and lose the database under it, so every call
// retries elsewhere; a retried signal or update is first looked up in the database, so a send that
// landed before its reply was lost is not repeated (handlers de-duplicate by token anyway).
// The newer shapes: updates whose callers time out while the workflow is busy in a step
// ('expiring'), cancels sent through another engine racing the start ('cancelrace'), delayed
// starts and resumes aimed at scheduled engine kills ('delayed', 'suspendable').
import type { HarnessDb } from './db.js';
import { EngineExitedError, EngineProc, Fleet } from './engines.js';
import { between, delay, pick, Rng, Tally } from './util.js';
import { busyCancel, chainScript, reuseScript, type ChainSend, type ReuseOutcome } from './driver-edges.js';
import { isDriven, type PlannedWorkflow } from './workload.js';
import { spawnedId } from '../../apps/worker/src/workflows.js';

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

/** How long one attempt waits for its reply (plus the call's own timeout, for updates). */
const CALL_DEADLINE_MS = 20_000;

class CallUnansweredError extends Error {
  override readonly name = 'CallUnansweredError';
}

/** Commands that need an engine that runs workflows; signal, update and query may go through a standby. */
const RUN_OPS = new Set(['start', 'cancel', 'suspend', 'resume', 'purge']);

type Try = { ok: true; value: unknown } | { ok: false; name: string; message: string; exited: boolean };

/** What happened to one update of an 'expiring' workflow, as the client saw it (or, when its reply was lost, as stored). */
export interface ExpiringOutcome {
  token: string;
  timeoutMs: number;
  outcome: 'applied' | 'timed_out' | 'unknown';
  value?: number;
  /** Learnt from weft_messages because the engine that had it died before replying. */
  fromDb?: boolean;
}

export interface CancelOutcome {
  starter: string | null;
  engine: string | null;
  sentAt: number;
  outcome: 'cancelled' | 'already-terminal' | 'gave-up';
  attempts: number;
}

export interface SuspendOutcome {
  suspended: boolean;
  suspendRefused?: string;
  resumed: boolean;
  resumeEngine?: string;
  resumeAttempts: number;
  resumeErrors: Record<string, number>;
}

export class Driver {
  readonly calls = new Tally(0);
  readonly callErrors = new Tally(3);
  /** Anomalies seen by the client (not invariant violations). */
  readonly anomalies = new Tally(5);
  /** Update results by workflow, in acknowledgement order. */
  readonly updateResults = new Map<string, number[]>();
  readonly started = new Set<string>();
  readonly expiring = new Map<string, ExpiringOutcome[]>();
  readonly cancels = new Map<string, CancelOutcome>();
  readonly suspends = new Map<string, SuspendOutcome>();
  readonly chains = new Map<string, ChainSend[]>();
  readonly reuses = new Map<string, ReuseOutcome>();
  readonly busyCancels = new Map<string, CancelOutcome>();
  /** 'cancelcleanup': the cancel of each, as the client saw it (checks-cleanup.ts: no cancel lost). */
  readonly cleanupCancels = new Map<string, CancelOutcome>();
  /** startAfter actually used per delayed workflow, and whether it was aimed at a scheduled engine fault. */
  readonly delayed = new Map<string, { startAfterMs: number; aimed: boolean }>();
  /** Absolute times of the scheduled engine faults (the harness fills it in): delayed starts and resumes aim at them. */
  faultTimes: number[] = [];
  /** Each workflow's client calls: when, to which engine, with what outcome (first 12). */
  readonly log = new Map<string, Array<{ at: number; what: string }>>();
  /** ...and its last 6 (a stalled run's dump shows what the client did last). */
  readonly recentCalls = new Map<string, Array<{ at: number; what: string }>>();
  /** What each workflow's client script is doing now, and since when (the stall watchdog's dump). */
  readonly phases = new Map<string, { what: string; since: number }>();
  /** Top-level workflows whose client script has not ended yet. */
  readonly scriptsRunning = new Set<string>();
  /** The last `count` top-level starts wait for `gate` (the end of the scheduled faults); when they went. */
  private tail: { count: number; gate: Promise<unknown> } | null = null;
  tailReleasedAt: number | null = null;
  /** The start loop waits for the tail's gate (the end of the faults): a quiet spell then is no stall. */
  waitingForTail = false;
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

  /** Client calls awaiting a reply now. */
  get callsInFlight(): number {
    return this.inFlight;
  }

  /** Notes what a workflow's client script does now; `since` stays while it keeps doing the same. */
  phase(workflowId: unknown, what: string): void {
    const id = String(workflowId);
    if (this.phases.get(id)?.what !== what) this.phases.set(id, { what, since: Date.now() });
  }

  /**
   * Holds the last `count` top-level starts until `gate` settles: with the faults' end as the gate,
   * every scheduled fault fires while the workload still has work to start, whatever the
   * machine's speed (a fast run no longer ends before its last fault, a slow one waits for it).
   */
  holdTailUntil(gate: Promise<unknown>, count: number): void {
    this.tail = { count, gate };
  }

  /** Starts every top-level workflow (paced), runs their message scripts; resolves when all scripts end. */
  async run(plan: PlannedWorkflow[]): Promise<void> {
    const top = plan.filter(isDriven);
    const t0 = Date.now();
    const spacing = this.o.startWindowMs / Math.max(1, top.length);
    const tailFrom = this.tail ? Math.max(0, top.length - this.tail.count) : Infinity;
    for (let i = 0; i < top.length && !this.stopped; i++) {
      if (i === tailFrom) {
        this.waitingForTail = true;
        await this.tail!.gate;
        this.waitingForTail = false;
        this.tailReleasedAt = Date.now();
      }
      await delay(t0 + i * spacing - Date.now());
      while (!this.stopped && (this.inFlight >= this.o.maxInFlightCalls || this.activeCount() + this.inFlight >= this.o.maxActive)) {
        this.phase(top[i].id, 'not started: the start loop waits for room (maxInFlightCalls / maxActive)');
        await delay(20);
      }
      this.scripts.push(this.tracked(top[i]));
    }
    await Promise.all(this.scripts);
  }

  /** The workflow's client script, noted as running until it ends (how it ended is its last phase). */
  private async tracked(w: PlannedWorkflow): Promise<void> {
    this.scriptsRunning.add(w.id);
    this.phase(w.id, 'script begun');
    try {
      await this.lifecycle(w);
      this.phase(w.id, `script ended (${this.phases.get(w.id)?.what ?? ''})`);
    } catch (err) {
      this.phase(w.id, `script threw: ${(err as Error).message?.slice(0, 200)}`);
      throw err;
    } finally {
      this.scriptsRunning.delete(w.id);
    }
  }

  private async lifecycle(w: PlannedWorkflow): Promise<void> {
    if (w.shape === 'cancelrace') return this.cancelRace(w);
    if (w.shape === 'reuse') return reuseScript(this, w);
    const start: Cmd = { op: 'start', type: w.type, workflowId: w.id, payload: w.input };
    if (w.startAfterMs !== null) {
      const aimed = this.aimAtFault(w.startAfterMs);
      start.startAfterMs = aimed.ms;
      this.delayed.set(w.id, { startAfterMs: aimed.ms, aimed: aimed.aimed });
    }
    const ok = await this.call(start);
    if (ok === undefined) return;
    this.started.add(w.id);
    if (w.shape === 'spawner') this.started.add(spawnedId(w.id)); // active until it ends, like its spawner
    if (w.shape === 'chain') await chainScript(this, w);
    if (w.shape === 'busycancel' || w.shape === 'cancelcleanup') await busyCancel(this, w);
    if (w.shape === 'signals') await this.signalScript(w);
    if (w.shape === 'updates') await this.updateScript(w);
    if (w.shape === 'expiring') await this.expiringScript(w);
    if (w.shape === 'suspendable') await this.suspendScript(w);
  }

  /**
   * A delay that ends next to a scheduled engine fault (within ±400 ms) when one is due in the
   * next 0.3-5 s (seven times in ten), else `fallbackMs`: delayed starts and resumes race kills.
   */
  private aimAtFault(fallbackMs: number): { ms: number; aimed: boolean } {
    const now = Date.now();
    const next = this.faultTimes.find((t) => t >= now + 300 && t <= now + 5000);
    if (next === undefined || this.r() >= 0.7) return { ms: fallbackMs, aimed: false };
    return { ms: Math.max(50, Math.round(next - now + between(this.r, -400, 400))), aimed: true };
  }

  /**
   * One attempt on one engine; never throws. An attempt that gets no reply within its deadline
   * counts as failed (the caller retries elsewhere) and is kept as a `call_unanswered` anomaly:
   * a real client times out too, and a run should not end on one lost reply.
   */
  async tryOn(e: EngineProc, cmd: Cmd, attempt: number): Promise<Try> {
    this.inFlight++;
    this.phase(cmd.workflowId, `${cmd.op}${cmd.name ? ` ${String(cmd.name)}` : ''} sent to ${e.engineId} (attempt ${attempt + 1})`);
    this.calls.add(attempt ? `${cmd.op}.retry` : cmd.op);
    const sent = Date.now();
    const limitMs = CALL_DEADLINE_MS + (typeof cmd.timeoutMs === 'number' ? cmd.timeoutMs : 0);
    let timer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new CallUnansweredError(`${e.engineId} gave no reply in ${limitMs} ms`)), limitMs);
    });
    try {
      const value = await Promise.race([e.call(cmd), unanswered]);
      this.calls.add(`${cmd.op}.ok`);
      this.note(cmd, sent, `${e.engineId} ok`);
      return { ok: true, value };
    } catch (err) {
      const { name, message } = err as Error;
      this.note(cmd, sent, `${e.engineId} ${name}: ${message.slice(0, 120)}`);
      const exited = err instanceof EngineExitedError;
      if (err instanceof CallUnansweredError) {
        this.anomalies.add('call_unanswered', { engine: e.engineId, state: e.state, cmd, sentAt: new Date(sent).toISOString() });
      }
      if (exited) this.callErrors.add(`${cmd.op}:EngineExited`);
      else this.callErrors.add(`${cmd.op}:${name}`, `${e.engineId}: ${message.slice(0, 300)}`);
      return { ok: false, name, message, exited };
    } finally {
      clearTimeout(timer);
      this.inFlight--;
    }
  }

  engineFor(op: string, avoid?: string | null): EngineProc | undefined {
    const all = RUN_OPS.has(op) ? this.fleet.live() : this.fleet.reachable();
    const others = all.filter((e) => e.engineId !== avoid);
    return pick(this.r, others.length ? others : all);
  }

  /** The start goes to one engine; the cancel, a seeded while later, to another (a non-owner), racing it. */
  private async cancelRace(w: PlannedWorkflow): Promise<void> {
    const starter = this.fleet.pickLive(this.r);
    const start = this.call({ op: 'start', type: w.type, workflowId: w.id, payload: w.input }, undefined, starter);
    await delay(w.cancelAfterMs ?? 0);
    const rec: CancelOutcome = { starter: starter?.engineId ?? null, engine: null, sentAt: Date.now(), outcome: 'gave-up', attempts: 0 };
    this.cancels.set(w.id, rec);
    await this.cancelUntilAnswered(w.id, rec, 'chaos: cancel racing the start', starter?.engineId);
    if ((await start) !== undefined) this.started.add(w.id);
  }

  /** Cancel through another engine than `avoid` until one answers that it cancelled or that it had ended. */
  async cancelUntilAnswered(workflowId: string, rec: CancelOutcome, reason: string, avoid?: string | null): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (let attempt = 0; !this.stopped && Date.now() < deadline; attempt++) {
      const e = this.engineFor('cancel', avoid);
      if (!e) {
        this.phase(workflowId, 'cancel: waiting for a live engine');
        await delay(100);
        continue;
      }
      rec.attempts++;
      const t = await this.tryOn(e, { op: 'cancel', workflowId, reason }, attempt);
      if (t.ok || (!t.ok && t.name === 'WorkflowNotRunningError')) {
        rec.engine = e.engineId;
        rec.outcome = t.ok ? 'cancelled' : 'already-terminal';
        return;
      }
      // Not there yet (the start has not inserted it): try again at once; anything else backs off.
      await delay(t.name === 'WorkflowNotFoundError' ? 5 : Math.min(100 * 2 ** Math.min(attempt, 4), 1000));
    }
  }

  /** Updates with a short client timeout, sent while the workflow is busy in its (longer) steps; then 'finish'. */
  private async expiringScript(w: PlannedWorkflow): Promise<void> {
    const outcomes: ExpiringOutcome[] = [];
    this.expiring.set(w.id, outcomes);
    for (let k = 0; k < w.updates.length && !this.stopped; k++) {
      await delay(between(this.r, 30, 300));
      outcomes.push(await this.expiringUpdate(w.id, w.updates[k], w.updateTimeoutsMs[k]));
    }
    await this.gap();
    await this.sendSignal(w.id, 'finish', { token: `${w.id}:finish`, value: w.finishValue });
  }

  private async expiringUpdate(workflowId: string, token: string, timeoutMs: number): Promise<ExpiringOutcome> {
    const base = { token, timeoutMs };
    for (let attempt = 0; !this.stopped; attempt++) {
      const stored = attempt > 0 ? await this.storedUpdate(workflowId, token) : null;
      if (stored) return { ...base, ...stored, fromDb: true };
      const e = this.engineFor('update');
      if (!e) {
        await delay(100);
        continue;
      }
      const cmd = { op: 'update', workflowId, name: 'bump', payload: { token }, timeoutMs };
      const t = await this.tryOn(e, cmd, attempt);
      if (t.ok) return { ...base, outcome: 'applied', value: Number(t.value) };
      if (t.name === 'UpdateTimeoutError') return { ...base, outcome: 'timed_out' };
      await delay(Math.min(100 * 2 ** Math.min(attempt, 4), 1000));
    }
    return { ...base, outcome: 'unknown' };
  }

  /**
   * An update request whose caller died: its stored outcome once it has one ('done' or 'expired';
   * a pending one is applied at the workflow's next delivery point, nobody expires it). Null when
   * no request with this token was stored (send it again).
   */
  private async storedUpdate(workflowId: string, token: string): Promise<Omit<ExpiringOutcome, 'token' | 'timeoutMs'> | null> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const rows = await this.db
        .query<{ status: string; result: { value?: unknown } | null }>(
          `SELECT status, result FROM ${this.weft}.weft_messages WHERE workflow_id = $1 AND kind = 'update' AND payload->>'token' = $2 ORDER BY id`,
          [workflowId, token],
        )
        .catch(() => null);
      if (rows === null) return null;
      const done = rows.find((r) => r.status === 'done');
      if (done) return { outcome: 'applied', value: Number(done.result?.value) };
      if (!rows.length) return null;
      if (!rows.some((r) => r.status === 'pending')) return { outcome: 'timed_out' };
      if (Date.now() > deadline || this.stopped) return { outcome: 'unknown' };
      await delay(200);
    }
  }

  /** Suspend through a random engine, then resume through a random engine (maybe one without the type), aimed at kills. */
  private async suspendScript(w: PlannedWorkflow): Promise<void> {
    const rec: SuspendOutcome = { suspended: false, resumed: false, resumeAttempts: 0, resumeErrors: {} };
    this.suspends.set(w.id, rec);
    this.phase(w.id, 'suspend: waiting for its time');
    await delay(w.suspendAfterMs ?? 0);
    await this.suspendOnce(w.id, rec);
    if (!rec.suspended) return;
    this.phase(w.id, 'resume: waiting for its time');
    await delay(this.aimAtFault(w.resumeAfterMs ?? 500).ms);
    await this.resumeOnce(w.id, rec);
  }

  /**
   * Waiting for a live engine spends neither an attempt nor the deadline: under 'lease' there is
   * none for a TTL after the holder dies, and on a loaded machine none for minutes while successive
   * holders recover (the worker is ready once its recovery is through). A suspend the dead holder
   * committed as it died must still be found and resumed: given up, it stayed suspended for good.
   */
  private async suspendOnce(workflowId: string, rec: SuspendOutcome): Promise<void> {
    const deadline = { at: Date.now() + 90_000 };
    for (let attempt = 0; !this.stopped && Date.now() < deadline.at;) {
      const e = this.engineFor('suspend');
      if (!e) {
        await this.awaitLiveEngine(workflowId, 'suspend', deadline);
        continue;
      }
      const t = await this.tryOn(e, { op: 'suspend', workflowId, reason: 'chaos: suspended' }, attempt++);
      if (t.ok) rec.suspended = true;
      else if (t.name === 'WorkflowNotRunningError') {
        // Already suspended by an attempt whose reply was lost, or already completed.
        rec.suspended = (await this.statusOf(workflowId)) === 'suspended';
        if (!rec.suspended) rec.suspendRefused = t.message.slice(0, 120);
      } else {
        await delay(Math.min(100 * 2 ** Math.min(attempt, 4), 1000));
        continue;
      }
      return;
    }
    if (!this.stopped) this.anomalies.add('suspend_gave_up', { workflowId, ...rec });
    this.phase(workflowId, 'suspend given up (90 s with a live engine)');
  }

  /** Like suspendOnce: only time with a live engine counts towards the deadline. */
  private async resumeOnce(workflowId: string, rec: SuspendOutcome): Promise<void> {
    const deadline = { at: Date.now() + 90_000 };
    for (let attempt = 0; !this.stopped && Date.now() < deadline.at; attempt++) {
      const e = this.engineFor('resume');
      if (!e) {
        await this.awaitLiveEngine(workflowId, 'resume', deadline);
        continue;
      }
      rec.resumeAttempts++;
      const t = await this.tryOn(e, { op: 'resume', workflowId }, attempt);
      if (!t.ok) rec.resumeErrors[t.name] = (rec.resumeErrors[t.name] ?? 0) + 1;
      if (t.ok || (t.name === 'WorkflowNotRunningError' && (await this.statusOf(workflowId)) !== 'suspended')) {
        rec.resumed = true;
        rec.resumeEngine = e.engineId;
        return;
      }
      await delay(Math.min(200 * 2 ** Math.min(attempt, 3), 2000));
    }
    this.anomalies.add('resume_gave_up', { workflowId, ...rec });
    this.phase(workflowId, 'resume given up (90 s with a live engine): the workflow stays suspended');
  }

  /** One wait for a live engine (100 ms); the time spent moves `deadline` on by as much. */
  private async awaitLiveEngine(workflowId: string, op: string, deadline: { at: number }): Promise<void> {
    this.phase(workflowId, `${op}: waiting for a live engine`);
    const from = Date.now();
    await delay(100);
    deadline.at += Date.now() - from;
  }

  async statusOf(workflowId: string): Promise<string | null> {
    const rows = await this.db
      .query<{ status: string }>(`SELECT status FROM ${this.weft}.weft_workflows WHERE id = $1`, [workflowId])
      .catch(() => []);
    return rows[0]?.status ?? null;
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

  async sendSignal(
    workflowId: string,
    name: string,
    payload: { token: string; value: number },
    counter?: { attempts: number },
  ): Promise<boolean> {
    const landed = async () => {
      const rows = await this.db.query(
        `SELECT 1 FROM ${this.weft}.weft_messages WHERE workflow_id = $1 AND kind = 'signal' AND name = $2 AND payload->>'token' = $3 LIMIT 1`,
        [workflowId, name, payload.token],
      );
      return rows.length ? true : undefined;
    };
    return (await this.call({ op: 'signal', workflowId, name, payload }, landed, undefined, counter)) !== undefined;
  }

  async sendUpdate(
    workflowId: string,
    token: string,
    payload: unknown = { token },
    counter?: { attempts: number },
  ): Promise<number | undefined> {
    const cmd = { op: 'update', workflowId, name: 'bump', payload, timeoutMs: this.o.updateTimeoutMs };
    const v = await this.call(cmd, () => this.updateOutcome(workflowId, token), undefined, counter);
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
    const e = this.engineFor('query');
    if (!e) return;
    // Through tryOn like every call: a reply deadline (an engine that never answers must not hold
    // the script, and with it the run, forever) and counted in flight.
    const t = await this.tryOn(e, { op: 'query', workflowId, name: 'status' }, 0);
    const v = (t.ok ? t.value : undefined) as { counter?: number } | undefined;
    if (t.ok && ackedUpdates > 0 && (v?.counter ?? 0) < ackedUpdates) {
      const at = new Date().toISOString();
      this.anomalies.add('query_behind_acknowledged_update', {
        workflowId,
        engine: e.engineId,
        at,
        answered: v,
        acknowledged: ackedUpdates,
      });
    }
  }

  private note(cmd: Cmd, sent: number, outcome: string): void {
    const id = String(cmd.workflowId);
    const entry = { at: sent, what: `${cmd.op}${cmd.name ? ` ${String(cmd.name)}` : ''} sent to ${outcome} after ${Date.now() - sent} ms` };
    const recent = this.recentCalls.get(id) ?? [];
    recent.push(entry);
    if (recent.length > 6) recent.shift();
    this.recentCalls.set(id, recent);
    this.phase(id, `last call: ${entry.what}`);
    const list = this.log.get(id) ?? [];
    if (list.length >= 12) return;
    list.push(entry);
    this.log.set(id, list);
  }

  /**
   * One client call with retries on any engine. Before each retry `landed` (if given) checks
   * whether an earlier attempt took effect; its non-undefined value is then the result.
   */
  async call(cmd: Cmd, landed?: () => Promise<unknown>, first?: EngineProc, counter?: { attempts: number }): Promise<unknown> {
    let notRunning = 0;
    for (let attempt = 0; !this.stopped; attempt++) {
      if (attempt > 0 && landed) {
        const v = await landed().catch(() => undefined);
        if (v !== undefined) {
          this.calls.add(`${cmd.op}.landed-before-retry`);
          return v;
        }
      }
      const e = attempt === 0 && first?.state === 'ready' ? first : this.engineFor(cmd.op);
      if (!e) {
        this.phase(cmd.workflowId, `${cmd.op}: waiting for a live engine`);
        await delay(100);
        continue;
      }
      if (counter) counter.attempts++;
      const t = await this.tryOn(e, cmd, attempt);
      if (t.ok) return t.value ?? true;
      if (t.name === 'WorkflowNotRunningError' && ++notRunning >= 3) {
        this.anomalies.add(`${cmd.op}_refused_workflow_not_running`, { cmd, message: t.message });
        return undefined;
      }
      await delay(Math.min(100 * 2 ** Math.min(attempt, 5), 2000));
    }
    return undefined;
  }
}
