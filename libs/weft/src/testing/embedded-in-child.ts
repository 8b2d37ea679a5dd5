import { spawn } from 'node:child_process';
import path from 'node:path';
import * as readline from 'node:readline';
import { EmbeddedDatabaseError } from '../common/errors.js';

/** Real time the child may take to start (or join) the server: an initdb on a slow machine. */
const START_TIMEOUT_MS = 120_000;

export interface ChildServer {
  url: string;
  /** Ends the child's stdin: it stops the server (unless another process still uses it) and exits. */
  stop(): Promise<void>;
}

/** Where the child's script is: beside this module once built (jest's CommonJS runtime gives __dirname). */
function defaultChild(): { script: string; execArgv: string[] } | null {
  return typeof __dirname === 'string' ? { script: path.join(__dirname, 'embedded-child.js'), execArgv: [] } : null;
}

const whatToSet =
  'Set WEFT_TEST_DATABASE_URL to a PostgreSQL server the tests may create schemas on (e.g. postgres://postgres@127.0.0.1:5432/postgres), ' +
  'or start the embedded server once in a global setup with startTestDatabaseServer() (docs/testing.md#databases).';

/**
 * Starts the embedded server in a plain Node child process, for a test process that cannot load
 * it itself (`loadError` says why). The child holds the server while this process keeps its
 * stdin open; it does not keep this process alive.
 */
export async function startEmbeddedInChild(dataDir: string, loadError: unknown, child = defaultChild()): Promise<ChildServer> {
  if (!child) {
    throw new EmbeddedDatabaseError(
      `this test process cannot load it (${String((loadError as Error)?.message ?? loadError)}). ${whatToSet}`,
      {
        cause: loadError,
      },
    );
  }
  const proc = spawn(process.execPath, [...child.execArgv, child.script, dataDir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const first = await new Promise<{ url?: string; error?: { message?: string } } | Error>((resolve) => {
    const timer = setTimeout(() => resolve(new Error(`no answer in ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
    const lines = readline.createInterface({ input: proc.stdout });
    lines.once('line', (line) => {
      clearTimeout(timer);
      lines.close();
      try {
        resolve(JSON.parse(line) as { url?: string; error?: { message?: string } });
      } catch {
        resolve(new Error(`unexpected output: ${line.slice(0, 200)}`));
      }
    });
    proc.once('error', (err) => (clearTimeout(timer), resolve(err)));
    proc.once('exit', (code) => (clearTimeout(timer), resolve(new Error(`the child exited with ${code} before answering`))));
  });
  if (first instanceof Error || !first.url) {
    proc.kill('SIGKILL');
    const why = first instanceof Error ? first.message : (first.error?.message ?? 'no URL');
    throw new EmbeddedDatabaseError(`in a child process (this test process cannot load it itself): ${why}. ${whatToSet}`, {
      cause: first instanceof Error ? first : loadError,
    });
  }
  // The child and its pipes must not keep the test runner from exiting; its stdin closing when
  // this process ends stops the server all the same.
  proc.unref();
  for (const s of [proc.stdin, proc.stdout] as unknown as Array<{ unref?: () => void }>) s.unref?.();
  return {
    url: first.url,
    async stop() {
      proc.stdin.end();
      const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
