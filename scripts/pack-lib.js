// npm run pack:lib: builds @weft/nest with tsc into libs/weft/dist (declarations, source maps)
// and writes exactly one tarball into dist/pack/ (`--out <dir>` for another directory).
// Prints { tarball, files, size, unpackedSize } as JSON on stdout.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '..');
const LIB = path.join(ROOT, 'libs', 'weft');
const outArg = process.argv.indexOf('--out');
const OUT = path.resolve(outArg > 0 ? process.argv[outArg + 1] : path.join(ROOT, 'dist', 'pack'));

const run = (cmd, args, cwd = ROOT) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });

fs.rmSync(path.join(LIB, 'dist'), { recursive: true, force: true });
run(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', path.join(LIB, 'tsconfig.build.json')]);
fs.copyFileSync(path.join(ROOT, 'LICENSE'), path.join(LIB, 'LICENSE'));

fs.rmSync(OUT, { recursive: true, force: true });
fs.mkdirSync(OUT, { recursive: true });
const [report] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', OUT], LIB));
const tarballs = fs.readdirSync(OUT).filter((f) => f.endsWith('.tgz'));
if (tarballs.length !== 1) throw new Error(`expected one tarball in ${OUT}, found ${tarballs.length}`);
const result = {
  tarball: path.relative(ROOT, path.join(OUT, tarballs[0])),
  files: report.entryCount,
  size: report.size,
  unpackedSize: report.unpackedSize,
};
process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
