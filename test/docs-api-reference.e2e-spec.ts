// The API reference (`npm run docs:api`, TypeDoc over the package's public entry, typedoc.json) is
// generated from the TSDoc, so the TSDoc is checked like code: TypeDoc converts the entry and runs
// its validation (a `{@link}` that resolves to nothing, a public declaration that mentions a type
// index.ts does not export, an unknown tag such as an unquoted `@Workflow` in prose), and any
// warning fails here with TypeDoc's own message, file and line. Nothing is written (no HTML) and
// no type-check is repeated (`npm run typecheck` does that), so this stays offline and fast.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Application, Logger, LogLevel, TSConfigReader, TypeDocReader, type TypeDocOptions } from 'typedoc';

const ROOT = path.join(import.meta.dirname, '..');

/** Keeps every warning and error TypeDoc logs, with the file and line it adds. */
class CollectingLogger extends Logger {
  readonly problems: string[] = [];
  override log(message: string, level: LogLevel): void {
    if (level >= LogLevel.Warn) this.problems.push(message);
  }
}

/** Converts and validates as `npm run docs:api` does, without rendering; returns every problem. */
async function apiReferenceProblems(options: TypeDocOptions, readers: Array<TypeDocReader | TSConfigReader>): Promise<string[]> {
  const app = await Application.bootstrapWithPlugins({ skipErrorChecking: true, ...options }, readers);
  const logger = new CollectingLogger();
  app.logger = logger;
  const project = await app.convert();
  if (project) app.validate(project);
  else logger.problems.push('TypeDoc could not convert the entry point');
  return logger.problems;
}

describe('the generated API reference', () => {
  it('builds from libs/weft/src/index.ts with no broken link, unexported type or unknown tag', async () => {
    const problems = await apiReferenceProblems({ options: path.join(ROOT, 'typedoc.json') }, [new TypeDocReader(), new TSConfigReader()]);
    expect(problems, problems.join('\n')).toEqual([]);
  });

  it('fails on a broken {@link} and on an unexported type (the check is not silent)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weft-typedoc-'));
    try {
      // A package of its own (TypeDoc names an unexported type by its package), one type kept internal.
      fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'fixture', version: '1.0.0' }));
      fs.writeFileSync(path.join(dir, 'hidden.ts'), 'export interface Hidden { a: number }\n');
      fs.writeFileSync(
        path.join(dir, 'index.ts'),
        [
          "import type { Hidden } from './hidden.js';",
          '/** Calls {@link NoSuchThing}. */',
          'export function f(h: Hidden): number { return h.a; }',
        ].join('\n'),
      );
      fs.writeFileSync(
        path.join(dir, 'tsconfig.json'),
        JSON.stringify({ compilerOptions: { strict: true, target: 'ES2022', module: 'NodeNext' }, files: ['index.ts'] }),
      );
      const problems = await apiReferenceProblems(
        {
          name: 'fixture',
          entryPoints: [path.join(dir, 'index.ts')],
          tsconfig: path.join(dir, 'tsconfig.json'),
          validation: { invalidLink: true, notExported: true, notDocumented: false },
        },
        [new TSConfigReader()],
      );
      expect(problems.join('\n')).toMatch(/NoSuchThing/);
      expect(problems.join('\n')).toMatch(/Hidden/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
