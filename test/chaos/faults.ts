// Fault injection on a seeded schedule: SIGKILL (then restart) an engine, SIGTERM an engine (a
// graceful stop: its dispose path with the shutdown grace period, then a new incarnation, like a
// rolling deploy), SIGSTOP an engine past the claim TTL (then SIGCONT), restart PostgreSQL with a
// fast or an immediate shutdown.
import type { PgCluster } from './cluster.js';
import type { HarnessDb } from './db.js';
import type { EngineProc, EngineState, Fleet } from './engines.js';

import { between, delay, pick, Rng, until } from './util.js';

export type FaultKind = 'sigkill' | 'sigterm' | 'sigstop' | 'pg-restart-fast' | 'pg-restart-immediate';
export const FAULT_KINDS: FaultKind[] = ['sigkill', 'sigterm', 'sigstop', 'pg-restart-fast', 'pg-restart-immediate'];
/** Faults that take an engine away (the driver may aim delayed starts and resumes at them). */
export const ENGINE_FAULTS: FaultKind[] = ['sigkill', 'sigterm', 'sigstop'];

export interface FaultPlan {
  kind: FaultKind;
  /** First occurrence (ms after the workload starts), then every `everyMs`, ±jitterMs. */
  firstAtMs: number;
  everyMs: number;
  jitterMs?: number;
  max?: number;
}

export interface FaultRecord {
  kind: FaultKind | 'engine-crash' | 'lease-lost-exit';
  /** Harness clock (ms since the epoch; same host clock as the database's). */
  at: number;
  endedAt?: number;
  engineId?: string;
  pid?: number;
  skipped?: string;
  detail?: Record<string, unknown>;
}

export interface FaultTiming {
  ttlMs: number;
  renewMs: number;
  /** Pause before an engine killed by the harness is started again (ms range). */
  restartDelayMs: [number, number];
  /** How long PostgreSQL stays down during a restart (ms range). */
  pgDownMs: [number, number];
  /** The engines' shutdown grace period; a SIGTERMed engine is SIGKILLed if it is not gone well after it. */
  shutdownGraceMs: number;
  ownership: 'workflow-lease' | 'lease';
}

/**
 * The harness state of an engine let go after a SIGSTOP. Its 'ready' or 'lease-lost' line may have
 * been read while it was marked stopped (written just before the signal), and was then ignored:
 * a standby that became the lease holder would be taken for a standby (no engine 'ready', so
 * every start, suspend and resume waits), a deposed holder for the holder.
 */
export function afterStop(e: Pick<EngineProc, 'readyAt' | 'leaseLostAt'>, before: EngineState): EngineState {
  if (before === 'ready' && e.leaseLostAt !== null) return 'halted';
  if ((before === 'standby' || before === 'starting') && e.readyAt !== null) return 'ready';
  return before;
}

export class FaultInjector {
  readonly records: FaultRecord[] = [];
  private stopped = false;
  private readonly running = new Set<Promise<void>>();
  private pgBusy = false;
  private wake: (() => void) | undefined;

  constructor(
    private readonly fleet: Fleet,
    private readonly cluster: PgCluster,
    private readonly db: HarnessDb,
    private readonly weft: string,
    private readonly timing: FaultTiming,
    private readonly r: Rng,
    private readonly log: (m: string) => void,
  ) {}

  /** The seeded schedule: [at, kind] pairs, ms after start, ordered; `horizonMs` bounds periodic faults. */
  static schedule(plans: FaultPlan[], r: Rng, horizonMs: number): Array<{ atMs: number; kind: FaultKind }> {
    const out: Array<{ atMs: number; kind: FaultKind }> = [];
    for (const p of plans) {
      for (let n = 0; n < (p.max ?? Infinity); n++) {
        const atMs = p.firstAtMs + n * p.everyMs + between(r, -1, 1) * (p.jitterMs ?? 0);
        if (atMs > horizonMs && n > 0) break;
        out.push({ atMs: Math.max(0, atMs), kind: p.kind });
      }
    }
    return out.sort((a, b) => a.atMs - b.atMs);
  }

  /** Runs the schedule from now; faults may overlap (a SIGSTOP lasts longer than the TTL). */
  async run(schedule: Array<{ atMs: number; kind: FaultKind }>, t0 = Date.now()): Promise<void> {
    for (const f of schedule) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.max(0, t0 + f.atMs - Date.now()));
        this.wake = () => (clearTimeout(t), resolve());
        if (this.stopped) this.wake();
      });
      if (this.stopped) break;
      const p = this.inject(f.kind).catch((err: Error) => this.log(`fault ${f.kind} failed: ${err.stack ?? err.message}`));
      this.running.add(p);
      void p.finally(() => this.running.delete(p));
    }
    await this.drain();
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
  }

  async drain(): Promise<void> {
    while (this.running.size) await Promise.all([...this.running]);
  }

  private inject(kind: FaultKind): Promise<void> {
    if (kind === 'sigkill') return this.sigkill();
    if (kind === 'sigterm') return this.sigterm();
    if (kind === 'sigstop') return this.sigstop();
    return this.pgRestart(kind === 'pg-restart-fast' ? 'fast' : 'immediate');
  }

  /**
   * A running engine, leaving at least one other one running. Under 'lease' the lease holder is
   * the target three times in four (a standby going away changes little).
   */
  private async target(kind: FaultKind): Promise<EngineProc | undefined> {
    const upNow = () => (this.timing.ownership === 'lease' ? this.fleet.running() : this.fleet.live());
    // Engines restarted by an earlier fault come back within seconds, or much later on a loaded
    // machine: wait for them however long it takes (the workload's tail waits for the faults, see
    // Driver.holdTailUntil), so a planned fault is only ever skipped when the run itself is over.
    while (upNow().length < 2 && !this.stopped) await new Promise((r) => setTimeout(r, 100));
    const up = upNow();
    let t = up.length >= 2 ? pick(this.r, up) : undefined;
    const holder = this.fleet.live()[0];
    if (t && this.timing.ownership === 'lease' && holder && this.r() < 0.75) t = holder;
    if (!t) this.records.push({ kind, at: Date.now(), skipped: `only ${up.length} running engine(s)` });
    return t;
  }

  /**
   * Graceful stop (a rolling deploy): SIGTERM, the worker disposes the engine (the shutdown grace
   * period for running steps, claims released) and exits 0; SIGKILL if it is not gone in grace +
   * 15 s. Then a new incarnation of the slot. The record keeps when it stopped and its dispose report.
   */
  private async sigterm(): Promise<void> {
    const e = await this.target('sigterm');
    if (!e) return;
    const rec: FaultRecord = { kind: 'sigterm', at: Date.now(), engineId: e.engineId, pid: e.pid };
    this.records.push(rec);
    const wasLeader = e.state === 'ready';
    e.expectedExit = true;
    e.state = 'stopping';
    e.signal('SIGTERM');
    let forced = false;
    const timer = setTimeout(() => ((forced = true), e.signal('SIGKILL')), this.timing.shutdownGraceMs + 15_000);
    const exit = await e.exited;
    clearTimeout(timer);
    const exitedAt = Date.now();
    await delay(between(this.r, ...this.timing.restartDelayMs));
    const next = this.fleet.spawn(e.slot);
    rec.endedAt = exitedAt;
    const d = e.disposed ?? {};
    rec.detail = {
      restartedAs: next.engineId,
      exitCode: exit.code,
      forced,
      wasLeader,
      disposeMs: d.disposeMs,
      // When the worker began to stop (it handles SIGTERM on its next turn, which a busy one takes a while to reach).
      stoppingAt: d.stoppingAt,
      disposeReport: d.report,
      ledgerMarksLeft: d.marksLeft,
    };
    this.log(
      `SIGTERM ${e.engineId} (pid ${e.pid}): exited ${exit.code ?? exit.signal} after ${exitedAt - rec.at} ms; restarted as ${next.engineId}`,
    );
  }

  private async sigkill(): Promise<void> {
    const e = await this.target('sigkill');
    if (!e) return;
    const rec: FaultRecord = { kind: 'sigkill', at: Date.now(), engineId: e.engineId, pid: e.pid };
    this.records.push(rec);
    e.expectedExit = true;
    e.signal('SIGKILL');
    await e.exited;
    await delay(between(this.r, ...this.timing.restartDelayMs));
    const next = this.fleet.spawn(e.slot);
    rec.endedAt = Date.now();
    rec.detail = { restartedAs: next.engineId };
    this.log(`SIGKILL ${e.engineId} (pid ${e.pid}); restarted as ${next.engineId}`);
  }

  /** Held claims of an engine on running workflows (the ones another engine must take over); 'lease': 1 while it holds the lease. */
  private async heldRunning(engineId: string): Promise<number> {
    if (this.timing.ownership === 'lease') {
      const l = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.weft}.weft_global_lease WHERE holder = $1`, [
        engineId,
      ]);
      return l[0].n;
    }
    const rows = await this.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.weft}.weft_workflow_claims c JOIN ${this.weft}.weft_workflows w ON w.id = c.workflow_id
       WHERE c.engine_id = $1 AND w.status = 'running'`,
      [engineId],
    );
    return rows[0].n;
  }

  /** SIGSTOP past TTL + takeover grace + a scan, and until its running workflows were taken over. */
  private async sigstop(): Promise<void> {
    const e = await this.target('sigstop');
    if (!e) return;
    const { ttlMs, renewMs } = this.timing;
    const rec: FaultRecord = { kind: 'sigstop', at: Date.now(), engineId: e.engineId, pid: e.pid };
    this.records.push(rec);
    const before = e.state;
    e.signal('SIGSTOP');
    e.state = 'stopped';
    const heldAtStop = await this.heldRunning(e.engineId).catch(() => -1);
    await delay(rec.at + ttlMs + 2 * renewMs + between(this.r, 1, 2) * renewMs - Date.now());
    const taken = await until(async () => (await this.heldRunning(e.engineId)) === 0, rec.at + 6 * ttlMs + 20_000, 100);
    const leftHeld = taken ? 0 : await this.heldRunning(e.engineId).catch(() => -1);
    e.signal('SIGCONT');
    if (e.state === 'stopped') e.state = afterStop(e, before);
    rec.endedAt = Date.now();
    rec.detail = { stoppedMs: rec.endedAt - rec.at, heldAtStop, stillHeldAtResume: leftHeld };
    this.log(`SIGSTOP ${e.engineId} for ${rec.endedAt - rec.at} ms (held ${heldAtStop}, still held at SIGCONT: ${leftHeld})`);
  }

  private async pgRestart(mode: 'fast' | 'immediate'): Promise<void> {
    const kind: FaultKind = mode === 'fast' ? 'pg-restart-fast' : 'pg-restart-immediate';
    // One restart at a time: a second one waits for the first (on a slow machine they may overlap).
    while (this.pgBusy && !this.stopped) await delay(100);
    if (this.pgBusy) {
      this.records.push({ kind, at: Date.now(), skipped: 'the run ended during another PostgreSQL restart' });
      return;
    }
    this.pgBusy = true;
    const rec: FaultRecord = { kind, at: Date.now() };
    this.records.push(rec);
    try {
      await this.cluster.stop(mode);
      const downAt = Date.now();
      await delay(between(this.r, ...this.timing.pgDownMs));
      const startAt = Date.now();
      await this.cluster.start();
      rec.endedAt = Date.now();
      rec.detail = { stopMs: downAt - rec.at, downMs: startAt - downAt, startMs: rec.endedAt - startAt };
      this.log(`PostgreSQL restart (${mode}): unavailable for ${rec.endedAt - rec.at} ms`);
    } finally {
      this.pgBusy = false;
    }
  }
}
