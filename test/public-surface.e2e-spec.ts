// The package's public surface: what users import from '@weft/nest' and what its published
// declarations mention. The declarations are built here with the package's own tsconfig into a
// temp directory (not libs/weft/dist, which `npm run pack:lib` owns).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as weft from '@weft/nest';
import { makeTempDir, REPO_ROOT } from './support/node-ts.js';
import { unexportedReferences } from './support/public-types.js';

describe('the public surface of @weft/nest', () => {
  let outDir: string;

  beforeAll(() => {
    outDir = makeTempDir('weft-dts-');
    const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    execFileSync(process.execPath, [tsc, '-p', 'libs/weft/tsconfig.build.json', '--outDir', outDir, '--emitDeclarationOnly'], {
      cwd: REPO_ROOT,
      stdio: 'pipe',
    });
  }, 120_000);
  afterAll(() => fs.rmSync(outDir, { recursive: true, force: true }));

  it('exports what users use: the module, decorators, engine, handles, context, errors, health, metrics', () => {
    for (const name of [
      'WeftModule',
      'Workflow',
      'Step',
      'SignalHandler',
      'UpdateHandler',
      'QueryHandler',
      'WeftEngine',
      'WorkflowHandle',
      'WeftHealthIndicator',
      'WeftMetrics',
      'WorkflowClaimRegistry',
      'ClaimRenewalScheduler',
      'WeftError',
      'EmbeddedPostgresNotInstalledError',
      'WorkflowFailedError',
    ]) {
      expect(weft).toHaveProperty(name);
    }
  });

  it('keeps internals out: the database opener, tuning constants, internal-only errors', () => {
    for (const name of [
      'openDatabase',
      'WORKFLOW_CLAIM_TTL_SAFETY_MULTIPLIER',
      'TAKEOVER_GRACE_MULTIPLIER',
      'WORKFLOW_CLAIM_TAKEOVER_MAX_ATTEMPTS',
      'WorkflowVersionConflictError',
      'EngineDeposedError',
      'WEFT_OPTIONS_TYPE',
      'WEFT_ASYNC_OPTIONS_TYPE',
    ]) {
      expect(weft).not.toHaveProperty(name);
    }
  });

  it('every exported error has a stable, unique WEFT_ code and a category, declared on its class', () => {
    const exported = Object.values(weft).filter(
      (v): v is typeof weft.WeftError => typeof v === 'function' && v.prototype instanceof weft.WeftError,
    ) as unknown as weft.WeftErrorClass[];
    expect(exported.length).toBeGreaterThan(25);
    for (const cls of exported) {
      expect(cls.code).toMatch(/^WEFT_[A-Z_]+$/);
      expect(Object.values(weft.ErrorCategory)).toContain(cls.category);
    }
    expect(new Set(exported.map((cls) => cls.code)).size).toBe(exported.length);
  });

  it('public declarations mention only exported types, and leave out what is marked @internal', () => {
    expect(unexportedReferences(path.join(outDir, 'index.d.ts'))).toEqual([]);
    // `ctx` is typed by an interface of the bottom module; users never construct it.
    expect(fs.readFileSync(path.join(outDir, 'common', 'types.d.ts'), 'utf8')).toMatch(/export interface WorkflowContext \{/);
    expect(fs.readFileSync(path.join(outDir, 'index.d.ts'), 'utf8')).toContain("export type * from './common/types.js';");
    const engine = fs.readFileSync(path.join(outDir, 'engine', 'engine.d.ts'), 'utf8');
    expect(engine).toMatch(/static create\(/);
    expect(engine).not.toMatch(/readonly store:|readonly ownership:/);
    // engine.database is documented (docs/api.md) and published, without the engine's own client.
    expect(engine).toMatch(/readonly database: OpenedDatabase;/);
    const db = fs.readFileSync(path.join(outDir, 'storage', 'data-source.d.ts'), 'utf8');
    expect(db).toMatch(/dataSource: DataSource;/);
    expect(db).not.toMatch(/sql: SqlClient|close\(\): Promise/);
  });

  it('the published types compile what the docs show and refuse what the engine refuses (Duration, engine.database)', () => {
    const consumer = path.join(outDir, 'consumer.ts');
    fs.writeFileSync(
      consumer,
      [
        "import type { Duration, WeftDatabase, WeftEngine, WorkflowContext } from './index.js';",
        'export async function use(engine: WeftEngine, ctx: WorkflowContext, fromEnv: string): Promise<unknown> {',
        '  const db: WeftDatabase = engine.database;',
        '  const ok: Duration[] = [250, "250", "250ms", "10s", "1.5 h", "5m", "2h", "1d"];',
        '  await ctx.sleep("30s");',
        '  // @ts-expect-error a unit the parser does not accept',
        '  await ctx.sleep("30 days");',
        '  // @ts-expect-error a plain string needs `as Duration` (checked at run time)',
        '  await ctx.sleep(fromEnv);',
        '  await ctx.sleep(fromEnv as Duration);',
        "  // @ts-expect-error the engine's own client is internal",
        '  void db.sql;',
        '  // @ts-expect-error dispose() the engine instead',
        '  void db.close;',
        '  return [db.dataSource, db.schema, db.target.kind, ok];',
        '}',
      ].join('\n'),
    );
    const tsc = path.join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
    const args = [
      tsc,
      '--ignoreConfig',
      '--noEmit',
      '--strict',
      '--skipLibCheck',
      '--module',
      'nodenext',
      '--moduleResolution',
      'nodenext',
      '--target',
      'es2023',
      consumer,
    ];
    let output = '';
    try {
      execFileSync(process.execPath, args, { cwd: REPO_ROOT, stdio: 'pipe' });
    } catch (err) {
      output = String((err as { stdout?: Buffer }).stdout ?? err);
    }
    expect(output).toBe('');
  });
});
