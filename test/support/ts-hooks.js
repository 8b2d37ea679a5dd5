// Module hooks (node:module register) that let a plain `node` process run the TypeScript sources
// with no build step: `.ts` files are compiled by swc on load, a relative `./x.js` import resolves
// to `./x.ts` when only that exists (NodeNext source style), and `@weft/nest` resolves to the
// library's source entry of the checkout the importing file is in (so a worktree of an older
// commit runs its own library), as the tsconfig path does for the type checker and the runner.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL, URL } from 'node:url';
import { transformSync } from '@swc/core';
import { ROOT, swcOptions } from './swc-options.js';

const ENTRY = path.join('libs', 'weft', 'src', 'index.ts');
const entries = new Map();

function weftEntry(parentURL) {
  let dir = parentURL?.startsWith('file:') ? path.dirname(fileURLToPath(parentURL)) : ROOT;
  const seen = [];
  for (;;) {
    const known = entries.get(dir);
    if (known) return remember(seen, known);
    seen.push(dir);
    if (fs.existsSync(path.join(dir, ENTRY))) return remember(seen, pathToFileURL(path.join(dir, ENTRY)).href);
    const up = path.dirname(dir);
    if (up === dir) return remember(seen, pathToFileURL(path.join(ROOT, ENTRY)).href);
    dir = up;
  }
}

function remember(dirs, url) {
  for (const d of dirs) entries.set(d, url);
  return url;
}

export async function resolve(specifier, context, nextResolve) {
  const parent = context.parentURL;
  if (specifier === '@weft/nest') return { url: weftEntry(parent), format: 'module', shortCircuit: true };
  if (parent?.startsWith('file:') && parent.endsWith('.ts') && /^\.\.?\//.test(specifier) && specifier.endsWith('.js')) {
    const asTs = new URL(`${specifier.slice(0, -3)}.ts`, parent);
    if (!fs.existsSync(new URL(specifier, parent)) && fs.existsSync(asTs)) return { url: asTs.href, format: 'module', shortCircuit: true };
  }
  return nextResolve(specifier, context);
}

export async function load(url, context, nextLoad) {
  if (url.startsWith('file:') && url.endsWith('.ts')) {
    const filename = fileURLToPath(url);
    const { code } = transformSync(fs.readFileSync(filename, 'utf8'), swcOptions(filename));
    return { format: 'module', source: code, shortCircuit: true };
  }
  return nextLoad(url, context);
}
