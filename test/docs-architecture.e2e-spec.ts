// docs/architecture.md names files and code; this keeps it honest as the code moves. The
// convention, for whoever edits that page:
//
// - A file or folder is written in backticks: `engine/engine.ts`, `storage/repositories/`. Paths
//   are relative to libs/weft/src/ unless they start with a top-level folder of the repository
//   (test/, docs/, bench/, apps/, src/, scripts/, libs/); a bare file name (`errors.ts`) must exist
//   somewhere under libs/weft/src/. A path with a placeholder (`<name>`, `*`) is not checked.
// - Code is written in backticks and checked when it reads as a name:
//   `PascalCase` and `UPPER_SNAKE` (with an underscore) must be exported by a module of
//   libs/weft/src/ or test/support/ (or be one of the few outside names listed in EXTERNAL);
//   `Class.member` must be a member of that exported class, interface or object that is not
//   `private` (nor `#private`); a `camelCase` name with a capital inside must be an exported
//   function or value, a member of an exported declaration that is not private, or the name of
//   a statement in a repository's `statements(schema)` (`clearHistory`).
//   One-word lowercase names (`seq`, `upd`), snake_case (SQL: `fence_epoch`, `ins_ops`),
//   `WEFT_…` codes and settings and `value.member` (lowercase head: `ctx.step`) are prose, not
//   checked. Names of private members are refused: the page is for the code's public shape.
// - Relative Markdown links ([text](file.md#anchor)) must point at a file that exists.
// - Every line fits in 100 characters.
//
// A failure lists every line and name that does not resolve, so a rename shows up as exactly the
// names to change.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.join(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'libs/weft/src');
const DOC = path.join(ROOT, 'docs/architecture.md');
const TOP_FOLDERS = ['test/', 'docs/', 'bench/', 'apps/', 'src/', 'scripts/', 'libs/'];
/** Names from the libraries Weft builds on, which the page mentions on purpose. */
const EXTERNAL = new Set([
  'Repository',
  'MigrationInterface',
  'PoolClient',
  'AsyncLocalStorage',
  'setImmediate',
  'setTimeout',
  'stripInternal',
]);

interface Declared {
  /** Member name → private? */
  members: Map<string, boolean>;
  /** Names of the classes this one extends (resolved through `declared` when they are ours). */
  bases: string[];
}

function sourceFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts') && !f.endsWith('.d.ts') && !f.includes('node_modules'))
    .map((f) => path.join(dir, f));
}

type Named = ts.Node & { name?: ts.Node };

const isPrivate = (node: Named): boolean =>
  (ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword)) ||
  (node.name !== undefined && ts.isPrivateIdentifier(node.name));

const isExported = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

/** The members a declaration lists (class, interface, object type, object literal, enum). */
function listedMembers(node: ts.Node): readonly Named[] {
  if (ts.isClassDeclaration(node))
    // Constructor parameter properties (`constructor(readonly x: X)`) are members too.
    return node.members.flatMap((m): Named[] =>
      ts.isConstructorDeclaration(m) ? [m, ...m.parameters.filter((p) => ts.getModifiers(p)?.length)] : [m],
    );
  if (ts.isInterfaceDeclaration(node) || ts.isEnumDeclaration(node)) return node.members;
  if (ts.isTypeAliasDeclaration(node) && ts.isTypeLiteralNode(node.type)) return node.type.members;
  if (ts.isVariableDeclaration(node) && node.initializer) {
    let init: ts.Expression = node.initializer;
    while (ts.isAsExpression(init) || ts.isSatisfiesExpression(init)) init = init.expression;
    if (ts.isObjectLiteralExpression(init)) return init.properties;
  }
  return [];
}

/** Member name → private? (a name declared twice, an overload, is private only if all are). */
function membersOf(node: ts.Node): Map<string, boolean> {
  const members = new Map<string, boolean>();
  for (const m of listedMembers(node))
    if (m.name && (ts.isIdentifier(m.name) || ts.isPrivateIdentifier(m.name) || ts.isStringLiteral(m.name)))
      members.set(m.name.text, (members.get(m.name.text) ?? true) && isPrivate(m));
  return members;
}

const basesOf = (d: ts.Node, sf: ts.SourceFile): string[] =>
  ts.isClassDeclaration(d) && d.heritageClauses
    ? d.heritageClauses
        .filter((h) => h.token === ts.SyntaxKind.ExtendsKeyword)
        .flatMap((h) => h.types.map((t) => t.expression.getText(sf).replace(/<.*$/, '')))
    : [];

/** The keys of the object a top-level `statements(schema)` function returns: the statements' names. */
function statementNames(sf: ts.SourceFile, into: Set<string>): void {
  for (const st of sf.statements) {
    if (!ts.isFunctionDeclaration(st) || st.name?.text !== 'statements' || !st.body) continue;
    for (const r of st.body.statements)
      if (ts.isReturnStatement(r) && r.expression && ts.isObjectLiteralExpression(r.expression))
        for (const p of r.expression.properties) if (p.name && ts.isIdentifier(p.name)) into.add(p.name.text);
  }
}

/** One file's exported declarations. */
function exportsOf(sf: ts.SourceFile): Map<string, Declared> {
  const local = new Map<string, Declared>();
  const exported = new Set<string>();
  for (const st of sf.statements) {
    const named: Named[] = ts.isVariableStatement(st) ? [...st.declarationList.declarations] : [st];
    for (const d of named) {
      if (!d.name || !ts.isIdentifier(d.name)) continue;
      local.set(d.name.text, { members: membersOf(d), bases: basesOf(d, sf) });
      if (isExported(st)) exported.add(d.name.text);
    }
    if (ts.isExportDeclaration(st) && st.exportClause && ts.isNamedExports(st.exportClause) && !st.moduleSpecifier)
      for (const e of st.exportClause.elements) exported.add(e.name.text);
  }
  return new Map([...exported].map((name) => [name, local.get(name) ?? { members: new Map<string, boolean>(), bases: [] }]));
}

/** What the page may name: exported declarations and their members, and statement names. */
class CodeIndex {
  readonly declared = new Map<string, Declared>();
  private readonly publicMembers = new Set<string>();
  private readonly privateMembers = new Set<string>();

  constructor() {
    for (const file of [...sourceFiles(SRC), ...sourceFiles(path.join(ROOT, 'test/support'))]) {
      const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      statementNames(sf, this.publicMembers);
      for (const [name, entry] of exportsOf(sf)) {
        const prev = this.declared.get(name);
        if (!prev) this.declared.set(name, entry);
        else for (const [m, p] of entry.members) prev.members.set(m, (prev.members.get(m) ?? true) && p);
      }
    }
    for (const d of this.declared.values())
      for (const [name, priv] of d.members) (priv ? this.privateMembers : this.publicMembers).add(name);
  }

  /** The member's privacy through the class and its bases of ours; undefined when none has it. */
  private memberPrivacy(head: string, member: string, seen = new Set<string>()): boolean | undefined {
    const d = this.declared.get(head);
    if (!d || seen.has(head)) return undefined;
    seen.add(head);
    if (d.members.has(member)) return d.members.get(member);
    for (const base of d.bases) {
      const p = this.memberPrivacy(base, member, seen);
      if (p !== undefined) return p;
    }
    return undefined;
  }

  /** `Head.member`: an exported head and a member of it that is not private. */
  checkMember(head: string, member: string): string | undefined {
    if (!/^[A-Z]/.test(head) || EXTERNAL.has(head)) return undefined;
    if (!this.declared.has(head)) return `${head} is not exported by any module of libs/weft/src or test/support`;
    const priv = this.memberPrivacy(head, member);
    if (priv !== undefined) return priv ? `${head}.${member} is private` : undefined;
    // A class of ours over an outside base (a TypeORM Repository): its members are the base's too.
    const external = (this.declared.get(head)?.bases ?? []).some((b) => !this.declared.has(b));
    return external ? undefined : `${head} has no member ${member}`;
  }

  /** A lone name: see the convention at the top of this file. */
  checkLone(name: string): string | undefined {
    if (/^WEFT_/.test(name) || EXTERNAL.has(name) || this.declared.has(name)) return undefined;
    const pascal = /^[A-Z]/.test(name) && /[a-z]/.test(name);
    const upperSnake = /^[A-Z][A-Z0-9]*_[A-Z0-9_]+$/.test(name);
    if (pascal || upperSnake) return `${name} is not exported by any module of libs/weft/src or test/support`;
    const camel = /^[a-z]/.test(name) && /[A-Z]/.test(name);
    if (!camel || this.publicMembers.has(name)) return undefined;
    return this.privateMembers.has(name)
      ? `${name} names only private members`
      : `${name} is neither exported nor a member of anything exported`;
  }

  checkName(span: string): string | undefined {
    const m = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?$/.exec(span.replace(/\(.*\)$/, ''));
    if (!m) return undefined;
    return m[2] === undefined ? this.checkLone(m[1]) : this.checkMember(m[1], m[2]);
  }
}

function checkPath(p: string): string | undefined {
  if (/[<>*]/.test(p) || p.startsWith('.')) return undefined;
  const clean = p.replace(/\/$/, '');
  if (TOP_FOLDERS.some((t) => p.startsWith(t))) return fs.existsSync(path.join(ROOT, clean)) ? undefined : `no file ${clean}`;
  if (!clean.includes('/')) {
    const found = fs.readdirSync(SRC, { recursive: true, encoding: 'utf8' }).some((f) => path.basename(f) === clean);
    return found ? undefined : `no file named ${clean} under libs/weft/src/`;
  }
  return fs.existsSync(path.join(SRC, clean)) ? undefined : `no file libs/weft/src/${clean}`;
}

/** Every problem of the page, as `docs/architecture.md:N: `span`: reason`. */
function problemsOf(text: string): string[] {
  const index = new CodeIndex();
  const problems: string[] = [];
  let fenced = false;
  text.split('\n').forEach((line, i) => {
    const where = `docs/architecture.md:${i + 1}`;
    if ([...line].length > 100) problems.push(`${where}: ${[...line].length} characters (at most 100)`);
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) return;
    for (const [, span] of line.matchAll(/`([^`]+)`/g)) {
      const isPath = /^[\w.<>*-]+(\/[\w.<>*-]*)*$/.test(span) && (/\.(ts|js|cjs|mjs|json|md)$/.test(span) || span.endsWith('/'));
      const problem = isPath ? checkPath(span) : index.checkName(span);
      if (problem) problems.push(`${where}: \`${span}\`: ${problem}`);
    }
    for (const [, target] of line.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target) || target.startsWith('#')) continue;
      if (!fs.existsSync(path.join(path.dirname(DOC), target.replace(/#.*$/, ''))))
        problems.push(`${where}: link to ${target}: no such file`);
    }
  });
  return problems;
}

describe('docs/architecture.md', () => {
  it('names only files that exist and exported code that is not private, in lines of at most 100 characters', () => {
    const problems = problemsOf(fs.readFileSync(DOC, 'utf8'));
    expect(problems, `\n${problems.join('\n')}`).toEqual([]);
  });

  it('reports a missing file, an unexported name, a missing member, a private one and a dead link', () => {
    // Any private member of an exported class will do; found here so a rename cannot break this test.
    const [owner, { members }] = [...new CodeIndex().declared].find(([, d]) => [...d.members.values()].some(Boolean))!;
    const hidden = [...members].find(([, priv]) => priv)![0];
    const problems = problemsOf(
      [
        'See `engine/no-such-file.ts`, `NoSuchClass`, `WeftEngine.noSuchMethod`, `WeftEngine.start`,',
        `\`${owner}.${hidden}\` and [a link](no-such-page.md).`,
      ].join('\n'),
    ).join('\n');
    expect(problems).toMatch(/engine\/no-such-file\.ts/);
    expect(problems).toMatch(/NoSuchClass is not exported/);
    expect(problems).toMatch(/WeftEngine has no member noSuchMethod/);
    expect(problems).toContain(`${owner}.${hidden} is private`);
    expect(problems).toMatch(/no-such-page\.md: no such file/);
    expect(problems).not.toContain('WeftEngine.start');
  });
});
