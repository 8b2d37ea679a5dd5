import { spawn } from 'node:child_process';
import { sourcePath, TS_NODE_ARGS } from './node-ts.js';

const CLI = sourcePath('libs/weft/src/cli/main.ts');

/** The CLI starts from source through the TypeScript hooks: seconds on a busy 2-core machine. */
const EXIT_DEADLINE_MS = 90_000;

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the `weft` CLI from source to its end; stdin is a pipe (not a terminal) closed after `stdin`. */
export function runCli(args: string[], opts: { env?: Record<string, string | undefined>; stdin?: string } = {}): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...opts.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const proc = spawn(process.execPath, [...TS_NODE_ARGS, CLI, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`weft ${args.join(' ')} did not exit within ${EXIT_DEADLINE_MS / 1000} s; stderr: ${stderr}`));
    }, EXIT_DEADLINE_MS);
    proc.on('error', reject);
    proc.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    proc.stdin.end(opts.stdin ?? '');
  });
}
