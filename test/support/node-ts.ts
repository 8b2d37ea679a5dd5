// How the multi-process tests run the sources in child `node` processes: through module hooks
// that compile TypeScript on load (register-ts.js), so no build step and no temp tree is needed.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const REPO_ROOT = path.resolve(import.meta.dirname, '..', '..');

/** Arguments that make `node` run the repository's TypeScript sources; put them before the script. */
export const TS_NODE_ARGS = ['--enable-source-maps', '--import', path.join(REPO_ROOT, 'test', 'support', 'register-ts.js')];

/** The absolute path of a source file, given relative to the repository root. */
export const sourcePath = (rel: string): string => path.join(REPO_ROOT, rel);

/** A fresh temp dir (world-traversable, so a server running as another user can use paths under it). */
export function makeTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}
