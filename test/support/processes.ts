import { ChildProcess, spawn } from 'node:child_process';
import { sourcePath, TS_NODE_ARGS } from './node-ts.js';

/** The source of a test fixture (test/fixtures/<name>.ts), for spawnChild. */
export const fixture = (name: string): string => sourcePath(`test/fixtures/${name}.ts`);

export interface Child {
  proc: ChildProcess;
  events: Array<Record<string, unknown>>;
  stderr: string[];
  waitEvent(name: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  exited: Promise<number | null>;
  /**
   * Asks the child to end (SIGTERM, or its stdin closed, as its script takes it) and waits for it;
   * one that has not gone after `graceMs` is SIGKILLed and said so on stderr, so a hung shutdown
   * costs a test its grace, not vitest's whole timeout.
   */
  stop(how?: 'SIGTERM' | 'stdin', graceMs?: number): Promise<void>;
}

/** Spawns `node script` (a TypeScript source, run through the module hooks) and collects its JSON-line events. */
export function spawnChild(script: string, env: Record<string, string>): Child {
  const proc = spawn(process.execPath, [...TS_NODE_ARGS, script], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const events: Array<Record<string, unknown>> = [];
  const stderr: string[] = [];
  const listeners = new Set<() => void>();
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      try {
        events.push(JSON.parse(line));
      } catch {
        stderr.push(line);
      }
      listeners.forEach((l) => l());
    }
  });
  proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  // 'close' comes after the child's output is all read: an event it did not send by then never comes.
  let closed = false;
  proc.on('close', () => {
    closed = true;
    listeners.forEach((l) => l());
  });
  const waitEvent = (name: string, timeoutMs = 30_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const fail = (why: string) => {
        listeners.delete(check);
        clearTimeout(t);
        reject(new Error(`child ${proc.pid} sent no "${name}": ${why}; stderr: ${stderr.join('').slice(-2000)}`));
      };
      const check = () => {
        const e = events.find((x) => x.event === name);
        if (e) {
          listeners.delete(check);
          clearTimeout(t);
          resolve(e);
        } else if (closed) {
          // Fails now, not at the deadline: a child that died starting is its own answer.
          fail(`it exited first (code ${proc.exitCode}, signal ${proc.signalCode})`);
        }
      };
      const t = setTimeout(() => fail(`not within ${timeoutMs} ms`), timeoutMs);
      listeners.add(check);
      check();
    });
  const stop = async (how: 'SIGTERM' | 'stdin' = 'SIGTERM', graceMs = 15_000) => {
    if (how === 'stdin') proc.stdin!.end();
    else proc.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
    if ((await Promise.race([exited, late])) === 'late') {
      console.error(`child ${proc.pid} still ran ${graceMs} ms after ${how}: killed; stderr: ${stderr.join('').slice(-2000)}`);
      proc.kill('SIGKILL');
      await exited;
    }
    clearTimeout(timer);
  };
  return { proc, events, stderr, waitEvent, exited, stop };
}

/**
 * The engine processes of one spec, each a fixture script given the spec's environment (read when
 * it spawns, so it may name a database created later), its engine id and its own extras. Whatever
 * still runs at the end is SIGKILLed by `killAll`, to call from afterAll.
 */
export class EngineProcesses {
  private readonly children: Child[] = [];

  constructor(
    private readonly script: string,
    private readonly env: () => Record<string, string>,
  ) {}

  /** Spawns engine `id`, without waiting for it. */
  spawn(id: string, env: Record<string, string> = {}): Child {
    const child = spawnChild(this.script, { ...this.env(), WEFT_ENGINE_ID: id, ...env });
    this.children.push(child);
    return child;
  }

  /** Spawns engine `id` and waits for its "ready" event. */
  async ready(id: string, env: Record<string, string> = {}, timeoutMs?: number): Promise<Child> {
    const child = this.spawn(id, env);
    await child.waitEvent('ready', timeoutMs);
    return child;
  }

  /** SIGKILLs `child` and waits for it to be gone. */
  async kill(child: Child): Promise<void> {
    child.proc.kill('SIGKILL');
    await child.exited;
  }

  async killAll(): Promise<void> {
    for (const child of this.children.splice(0)) await this.kill(child);
  }
}

/** test/fixtures/engine-child.ts under ownership 'workflow-lease' with claims short enough to lapse within a test. */
export const WORKFLOW_LEASE_ENGINE = {
  WEFT_SCHEMA: 'weft',
  OWNERSHIP: 'workflow-lease',
  CLAIM_TTL_MS: '1500',
  CLAIM_RENEW_MS: '500',
};
