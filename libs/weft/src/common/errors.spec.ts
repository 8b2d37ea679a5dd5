import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as cliErrors from '../cli/errors.js';
import * as nestErrors from '../nest/nest-errors.js';
import * as commonErrors from './errors.js';
import { ErrorCategory, WeftError, WorkflowNotFoundError, type WeftErrorClass } from './errors.js';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODULES = { 'common/errors.ts': commonErrors, 'nest/nest-errors.ts': nestErrors, 'cli/errors.ts': cliErrors };

/** The module a file's classes are exported by: common/errors.ts re-exports the files of common/errors/. */
const errorModule = (file: string): string => (file.startsWith('common/errors/') ? 'common/errors.ts' : file);

const errorClasses = (mod: object): [string, WeftErrorClass][] =>
  Object.entries(mod).filter(([, v]) => typeof v === 'function' && v.prototype instanceof WeftError) as [string, WeftErrorClass][];

function sourceFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sourceFiles(full);
    return e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts') ? [full] : [];
  });
}

describe('the error classes', () => {
  const classes = Object.values(MODULES).flatMap(errorClasses);

  it('are declared only in the error modules, and every one is exported', () => {
    const declared = new Map<string, string[]>();
    for (const f of sourceFiles(SRC)) {
      const text = fs.readFileSync(f, 'utf8');
      if (!/\bextends WeftError\b/.test(text)) continue;
      const owner = errorModule(path.relative(SRC, f).split(path.sep).join('/'));
      const names = [...text.matchAll(/class (\w+) extends WeftError\b/g)].map((m) => m[1]);
      declared.set(owner, [...(declared.get(owner) ?? []), ...names]);
    }
    expect([...declared.keys()].sort()).toEqual(Object.keys(MODULES).sort());
    for (const [file, mod] of Object.entries(MODULES)) {
      expect(declared.get(file)?.sort(), file).toEqual(
        errorClasses(mod)
          .map(([name]) => name)
          .sort(),
      );
    }
  });

  it('each declare their own stable, unique WEFT_ code and a category', () => {
    expect(classes.length).toBeGreaterThan(40);
    const categories: string[] = Object.values(ErrorCategory);
    for (const [name, cls] of classes) {
      expect(Object.hasOwn(cls, 'code') && cls.code, name).toMatch(/^WEFT_[A-Z_]+$/);
      expect(Object.hasOwn(cls, 'category') && categories.includes(cls.category), name).toBe(true);
    }
    const codes = classes.map(([, cls]) => cls.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('give their code (an own field, recorded with the error) and category to each instance', () => {
    const err = new WorkflowNotFoundError('x');
    expect(err.code).toBe('WEFT_WORKFLOW_NOT_FOUND');
    expect(err.category).toBe(ErrorCategory.NotFound);
    expect(Object.keys(err)).toContain('code');
    expect(Object.keys(err)).not.toContain('category');
  });
});
