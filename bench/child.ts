// A bench's child process that reports on stdout as JSON lines ({ event, ... }) and takes
// commands on stdin: used by bench/recovery to keep each engine alone in its process.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { TS_NODE_ARGS } from '../test/support/node-ts.js';
import { round } from './support.js';

/** Every child started, so a failing parent can kill what is left. */
export const children = new Set<Child>();

export class Child {
  readonly proc: ChildProcess;
  private readonly lines: Array<Record<string, unknown>> = [];
  private readonly wakers = new Set<() => void>();
  exited = false;

  /** Runs `script` (TypeScript, through the repository's loader) with `nodeFlags` and `env` added. */
  constructor(script: string, nodeFlags: string[], env: Record<string, string>) {
    // --no-warnings: Weft warnings (one per lost claim) are counted through onWarning instead.
    const args = ['--expose-gc', '--no-warnings', ...nodeFlags, ...TS_NODE_ARGS, script];
    this.proc = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'inherit'] });
    children.add(this);
    createInterface({ input: this.proc.stdout! }).on('line', (line) => {
      if (line.trim()) this.lines.push(JSON.parse(line) as Record<string, unknown>);
      this.wake();
    });
    this.proc.on('exit', () => {
      this.exited = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.wakers) w();
    this.wakers.clear();
  }

  /** The next line of that event (lines of other events wait for their own caller). */
  async next(event: string): Promise<Record<string, unknown>> {
    for (;;) {
      const i = this.lines.findIndex((e) => e.event === event);
      if (i >= 0) return this.lines.splice(i, 1)[0];
      if (this.exited) throw new Error(`child exited (${this.proc.exitCode ?? this.proc.signalCode}) before "${event}"`);
      await new Promise<void>((r) => this.wakers.add(r));
    }
  }

  send(cmd: string): void {
    this.proc.stdin!.write(`${cmd}\n`);
  }

  /** The kernel's peak RSS of the child (VmHWM): what 200 ms samples can miss. */
  vmHwmMiB(): number {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.proc.pid}/status`, 'utf8'));
    return m ? round(Number(m[1]) / 1024, 1) : NaN;
  }

  /** Asks it to exit (the `exit` command), SIGKILL after 10 s. */
  async exit(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.send('exit');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 10_000);
    await gone;
    clearTimeout(t);
  }
}
