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
  const waitEvent = (name: string, timeoutMs = 30_000) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const check = () => {
        const e = events.find((x) => x.event === name);
        if (e) {
          listeners.delete(check);
          clearTimeout(t);
          resolve(e);
        }
      };
      const t = setTimeout(() => {
        listeners.delete(check);
        reject(new Error(`child ${proc.pid} sent no "${name}" within ${timeoutMs} ms; stderr: ${stderr.join('').slice(-2000)}`));
      }, timeoutMs);
      listeners.add(check);
      proc.once('exit', () => setTimeout(check, 0));
      check();
    });
  return { proc, events, stderr, waitEvent, exited };
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
