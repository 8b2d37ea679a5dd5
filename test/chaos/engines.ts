// Engine processes (apps/worker, transpiled) and the client protocol to them (JSON lines on
// stdin/stdout, see apps/worker/src/commands.ts).
import { ChildProcess, spawn } from 'node:child_process';
import { jsonLines } from '../support/json-lines.js';
import { TS_NODE_ARGS } from '../support/node-ts.js';
import { StderrScanner } from './logscan.js';
import { pick, Rng, Tally } from './util.js';

export class EngineExitedError extends Error {
  override readonly name = 'EngineExitedError';
}

export interface RemoteError {
  name: string;
  message: string;
}

export class RemoteCallError extends Error {
  override readonly name: string;
  constructor(readonly remote: RemoteError) {
    super(remote.message);
    this.name = remote.name;
  }
}

/**
 * 'standby': ownership 'lease', waiting for the lease (answers signal/update/query only);
 * 'halted': it lost the lease and will stop itself; 'stopping': SIGTERM sent (graceful stop).
 */
export type EngineState = 'starting' | 'standby' | 'ready' | 'halted' | 'stopping' | 'stopped' | 'exited';

/** The worker's exit code after it lost the global lease (apps/worker/src/main.ts). */
export const LEASE_LOST_EXIT = 3;

export interface ExitRecord {
  engineId: string;
  pid: number;
  code: number | null;
  signal: string | null;
  at: number;
  expected: boolean;
  stderrTail: string[];
}

interface Pending {
  resolve(v: unknown): void;
  reject(e: unknown): void;
}

export class EngineProc {
  state: EngineState = 'starting';
  readonly startedAt = Date.now();
  readyAt: number | null = null;
  startAttempts = 0;
  /** When it lost the global lease (ownership 'lease'), by its own report. */
  leaseLostAt: number | null = null;
  /** Its 'disposed' event (graceful stop): the dispose report and how long it took. */
  disposed: Record<string, unknown> | null = null;
  /** Set before the harness itself kills or stops it, so the exit is not counted as a crash. */
  expectedExit = false;
  readonly exited: Promise<ExitRecord>;
  readonly ready: Promise<void>;
  private readonly proc: ChildProcess;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private readonly scanner: StderrScanner;

  constructor(
    readonly slot: string,
    readonly incarnation: number,
    script: string,
    env: Record<string, string>,
    private readonly events: Tally,
    logs: Tally,
  ) {
    this.proc = spawn(process.execPath, ['--no-warnings', ...TS_NODE_ARGS, script], {
      env: { ...process.env, ...env, WEFT_ENGINE_ID: this.engineId, WORKER_COMMANDS: 'stdin' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.proc.stdin!.on('error', () => undefined);
    this.scanner = new StderrScanner(logs, this.engineId);
    this.proc.stderr!.on('data', (d: Buffer) => this.scanner.push(d.toString()));
    let onReady: () => void = () => undefined;
    let onFail: (e: Error) => void = () => undefined;
    this.ready = new Promise<void>((res, rej) => ((onReady = res), (onFail = rej)));
    this.ready.catch(() => undefined);
    const onLine = jsonLines((e) => this.event(e, onReady));
    this.proc.stdout!.on('data', (d: Buffer) => onLine(d.toString()));
    this.exited = new Promise<ExitRecord>((resolve) => {
      this.proc.on('exit', (code, signal) => {
        this.state = 'exited';
        const expected = this.expectedExit || code === LEASE_LOST_EXIT;
        const rec = { engineId: this.engineId, pid: this.pid, code, signal, at: Date.now(), expected };
        for (const p of this.pending.values()) p.reject(new EngineExitedError(`${this.engineId} exited (${signal ?? code})`));
        this.pending.clear();
        onFail(new EngineExitedError(`${this.engineId} exited before it was ready (${signal ?? code})`));
        resolve({ ...rec, stderrTail: this.scanner.tail.slice(-15) });
      });
    });
  }

  get engineId(): string {
    return `${this.slot}${this.incarnation}`;
  }

  get pid(): number {
    return this.proc.pid ?? -1;
  }

  /** Its last stderr lines (the stall watchdog's dump). */
  stderrTail(n: number): string[] {
    return this.scanner.tail.slice(-n);
  }

  /** Commands sent to it and not answered yet. */
  get pendingCalls(): number {
    return this.pending.size;
  }

  private event(e: Record<string, unknown>, onReady: () => void): void {
    if (e.event === 'reply') this.reply(e);
    else if (e.event === 'standby') {
      if (this.state === 'starting') this.state = 'standby';
    } else if (e.event === 'lease-lost') {
      this.leaseLostAt = Number(e.at ?? Date.now());
      if (this.state === 'ready') this.state = 'halted';
      this.events.add('lease-lost', { engineId: this.engineId, at: new Date(this.leaseLostAt).toISOString() });
    } else if (e.event === 'disposed') {
      this.disposed = e;
      this.events.add('disposed', { engineId: this.engineId, ...e });
    } else if (e.event === 'ready') {
      this.state = this.state === 'starting' || this.state === 'standby' ? 'ready' : this.state;
      this.readyAt = Date.now();
      this.startAttempts = Number(e.startAttempts ?? 1);
      onReady();
    } else if (typeof e.event === 'string') this.events.add(e.event, { engineId: this.engineId, ...e });
  }

  private reply(e: Record<string, unknown>): void {
    const p = this.pending.get(Number(e.id));
    if (!p) return;
    this.pending.delete(Number(e.id));
    if (e.ok) p.resolve(e.value);
    else p.reject(new RemoteCallError(e.error as RemoteError));
  }

  /** Sends one command; settles with its reply, or EngineExitedError if the process dies first. */
  call(cmd: Record<string, unknown>): Promise<unknown> {
    if (this.state === 'exited') return Promise.reject(new EngineExitedError(`${this.engineId} has exited`));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.proc.stdin!.write(`${JSON.stringify({ ...cmd, id })}\n`);
    });
  }

  signal(sig: NodeJS.Signals): void {
    if (this.state === 'exited') return;
    try {
      this.proc.kill(sig);
    } catch {
      /* already gone */
    }
  }
}

/** The N engine slots (A, B, C, ...); a slot's engine id is slot + incarnation (A1, A2, ...). */
export class Fleet {
  readonly slots = new Map<string, EngineProc>();
  readonly all: EngineProc[] = [];
  readonly exits: ExitRecord[] = [];
  readonly events = new Tally(5);
  readonly logs = new Tally(4);
  private closing = false;
  /** Called when an engine exits without the harness asking (a crash): the harness restarts it. */
  onCrash: (e: EngineProc, rec: ExitRecord) => void = () => undefined;
  /** Called when an engine stopped itself after losing the global lease: the harness restarts it. */
  onLeaseLostExit: (e: EngineProc, rec: ExitRecord) => void = () => undefined;

  constructor(
    private readonly script: string,
    /** The workers' environment, per slot. */
    private readonly env: (slot: string) => Record<string, string>,
  ) {}

  spawn(slot: string): EngineProc {
    const incarnation = this.all.filter((e) => e.slot === slot).length + 1;
    const e = new EngineProc(slot, incarnation, this.script, this.env(slot), this.events, this.logs);
    this.slots.set(slot, e);
    this.all.push(e);
    void e.exited.then((rec) => {
      this.exits.push(rec);
      if (this.closing) return;
      if (!e.expectedExit && rec.code === LEASE_LOST_EXIT) this.onLeaseLostExit(e, rec);
      else if (!rec.expected) this.onCrash(e, rec);
    });
    return e;
  }

  /** Engines that run workflows now (ready: not SIGSTOPped, not stopping; under 'lease': the holder). */
  live(): EngineProc[] {
    return [...this.slots.values()].filter((e) => e.state === 'ready');
  }

  pickLive(r: Rng = Math.random): EngineProc | undefined {
    return pick(r, this.live());
  }

  /** Engines that answer signal, update and query: the live ones plus, under 'lease', the standbys. */
  reachable(): EngineProc[] {
    return [...this.slots.values()].filter((e) => e.state === 'ready' || e.state === 'standby');
  }

  /** Processes up and not paused (fault targets): live, standby or halted. */
  running(): EngineProc[] {
    return [...this.slots.values()].filter((e) => e.state === 'ready' || e.state === 'standby' || e.state === 'halted');
  }

  /** Graceful stop of every engine (SIGTERM: dispose, release claims); SIGKILL after the deadline. */
  async shutdown(timeoutMs: number): Promise<{ graceful: string[]; forced: string[] }> {
    this.closing = true;
    const current = [...this.slots.values()].filter((e) => e.state !== 'exited');
    const graceful: string[] = [];
    const forced: string[] = [];
    await Promise.all(
      current.map(async (e) => {
        e.expectedExit = true;
        e.signal('SIGCONT');
        e.signal('SIGTERM');
        const timer = setTimeout(() => (forced.push(e.engineId), e.signal('SIGKILL')), timeoutMs);
        const rec = await e.exited;
        clearTimeout(timer);
        if (rec.code === 0) graceful.push(e.engineId);
      }),
    );
    return { graceful, forced };
  }

  /** Last resort (test teardown): no process is left behind. */
  killAll(): void {
    this.closing = true;
    for (const e of this.all) {
      e.expectedExit = true;
      e.signal('SIGCONT');
      e.signal('SIGKILL');
    }
  }
}
