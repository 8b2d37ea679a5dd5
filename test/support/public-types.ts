// Checks the published declarations: every type that a public declaration mentions must itself be
// exported from the package entry, or users would meet names they cannot import.
import * as path from 'node:path';
import ts from 'typescript';

const resolveAlias = (checker: ts.TypeChecker, s: ts.Symbol): ts.Symbol =>
  s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;

const isPrivate = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.PrivateKeyword);

/** `owner → Name (file)` for every type a public declaration references that the entry does not export. */
export function unexportedReferences(indexDts: string): string[] {
  const program = ts.createProgram([indexDts], {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    noEmit: true,
    skipLibCheck: true,
  });
  const checker = program.getTypeChecker();
  const entry = program.getSourceFile(indexDts);
  const moduleSymbol = entry && checker.getSymbolAtLocation(entry);
  if (!moduleSymbol) throw new Error(`${indexDts} is not a module`);
  const dist = path.dirname(path.resolve(indexDts));
  const exported = new Set(checker.getExportsOfModule(moduleSymbol).map((s) => resolveAlias(checker, s)));
  const problems = new Set<string>();

  const check = (symbol: ts.Symbol | undefined, owner: string): void => {
    if (!symbol) return;
    let s = resolveAlias(checker, symbol);
    if (s.flags & ts.SymbolFlags.TypeParameter) return;
    while (s.flags & (ts.SymbolFlags.EnumMember | ts.SymbolFlags.Property | ts.SymbolFlags.Method)) {
      const parent = (s as ts.Symbol & { parent?: ts.Symbol }).parent;
      if (!parent) return;
      s = parent;
    }
    const decl = s.declarations?.[0];
    if (!decl) return;
    const file = path.resolve(decl.getSourceFile().fileName);
    if (!file.startsWith(dist + path.sep) || exported.has(s)) return;
    problems.add(`${owner} → ${s.getName()} (${path.relative(dist, file)})`);
  };

  const visit = (node: ts.Node, owner: string): void => {
    if (isPrivate(node)) return;
    if (ts.isTypeReferenceNode(node)) check(checker.getSymbolAtLocation(node.typeName), owner);
    else if (ts.isExpressionWithTypeArguments(node)) check(checker.getSymbolAtLocation(node.expression), owner);
    else if (ts.isTypeQueryNode(node)) check(checker.getSymbolAtLocation(node.exprName), owner);
    else if (ts.isImportTypeNode(node) && node.qualifier) check(checker.getSymbolAtLocation(node.qualifier), owner);
    ts.forEachChild(node, (child) => visit(child, owner));
  };

  for (const symbol of exported) {
    for (const decl of symbol.declarations ?? []) {
      if (path.resolve(decl.getSourceFile().fileName).startsWith(dist + path.sep)) visit(decl, symbol.getName());
    }
  }
  return [...problems].sort();
}
