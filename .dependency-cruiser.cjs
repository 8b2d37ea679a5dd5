// `npm run lint` runs this over the library: no import cycles (type-only imports included) and
// dependencies pointing one way: nest -> engine -> ownership -> storage -> common (docs/architecture.md).
const SRC = '^libs/weft/src/';
const layer = (name, mayNotImport, comment) => ({
  name,
  comment,
  severity: 'error',
  from: { path: `${SRC}${name}/` },
  to: { path: `${SRC}(${mayNotImport.join('|')})(/|\\.ts$)` },
});

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'Import cycles, type-only ones too, make files unreadable alone.',
      severity: 'error',
      from: { path: SRC },
      to: { circular: true },
    },
    layer(
      'common',
      ['storage', 'observability', 'ownership', 'engine', 'nest', 'index'],
      'common/ is the bottom: it imports nothing of the package.',
    ),
    layer('storage', ['observability', 'ownership', 'engine', 'nest', 'index'], 'storage/ sees only common/.'),
    layer('observability', ['storage', 'ownership', 'engine', 'nest', 'index'], 'observability/ sees only common/.'),
    layer('ownership', ['engine', 'nest', 'index'], 'ownership/ is a policy the engine is given; it never reaches into engine/.'),
    layer('engine', ['nest', 'index'], 'engine/ runs without Nest.'),
    layer('cli', ['nest', 'ownership', 'observability', 'index'], 'cli/ (the weft bin) works through engine/, storage/ and common/.'),
    {
      name: 'nothing-imports-cli',
      comment: 'cli/ is the bin: no layer of the library depends on it.',
      severity: 'error',
      from: { path: SRC, pathNot: `${SRC}cli/` },
      to: { path: `${SRC}cli/` },
    },
    {
      name: 'nothing-imports-testing',
      comment: 'testing/ is the `@weft/nest/testing` entry: nothing of it may load in production code paths.',
      severity: 'error',
      from: { path: SRC, pathNot: `${SRC}testing/` },
      to: { path: `${SRC}testing/` },
    },
    {
      name: 'index-is-for-users',
      comment: 'Inside the package, import the module itself, not the public index.',
      severity: 'error',
      from: { path: SRC, pathNot: `${SRC}index\\.ts$` },
      to: { path: `${SRC}index\\.ts$` },
    },
    {
      name: 'library-stands-alone',
      comment: 'The package must not import the demo, the worker, tests or benches.',
      severity: 'error',
      from: { path: SRC },
      to: { path: '^(src|apps|test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '\\.spec\\.ts$|/dist/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
  },
};
