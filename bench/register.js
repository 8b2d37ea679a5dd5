// Minimal require hook so benchmarks run from TypeScript sources without a build step:
// node -r ./bench/register.js bench/throughput.ts
const fs = require('node:fs');
const path = require('node:path');
const { transformSync } = require('@swc/core');

const root = path.resolve(__dirname, '..');
const options = (filename) => ({
  filename,
  swcrc: false,
  configFile: false,
  sourceMaps: 'inline',
  jsc: {
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true },
    target: 'es2022',
    keepClassNames: true,
    baseUrl: root,
    paths: { '@weft/nest': ['libs/weft/src'], '@weft/nest/*': ['libs/weft/src/*'] },
  },
  module: { type: 'commonjs' },
});

require.extensions['.ts'] = function compileTs(module, filename) {
  const source = fs.readFileSync(filename, 'utf8');
  module._compile(transformSync(source, options(filename)).code, filename);
};
